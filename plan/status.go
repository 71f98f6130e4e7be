package plan

import (
	"fmt"
	"slices"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/connections"
)

// MaxStatusExports caps ClusterSet status.exports; status.summary.exports counts them all.
const MaxStatusExports = 1000

// MaxStatusClusters caps ClusterSet status.clusters: every member up to it, those that
// need attention first past it (a ClusterSet of 1,000 members with their status would
// not fit in one etcd object). Every member's ClusterSetMember has its entry.
const MaxStatusClusters = 256

// StatusClusters is the part of clusters (sorted by name) that ClusterSet
// status.clusters lists: all of them up to MaxStatusClusters; past it, those not Ready
// first, then the rest by name, MaxStatusClusters in all, sorted by name.
func StatusClusters(clusters []straitv1.ClusterStatus) []straitv1.ClusterStatus {
	if len(clusters) <= MaxStatusClusters {
		return clusters
	}
	// By index, so that only the entries listed are copied, once.
	picked := make([]int, 0, MaxStatusClusters)
	for _, ready := range []bool{false, true} {
		for i := range clusters {
			if len(picked) < MaxStatusClusters && apimeta.IsStatusConditionTrue(clusters[i].Conditions, meta.ReadyCondition) == ready {
				picked = append(picked, i)
			}
		}
	}
	slices.Sort(picked) // clusters are sorted by name
	out := make([]straitv1.ClusterStatus, len(picked))
	for j, i := range picked {
		out[j] = clusters[i]
	}
	return out
}

// MaxStatusConnections caps the connections listed over every cluster of the status:
// members × (members − 1) of them would not fit in one etcd object past a few dozen
// members (4.7 MB at 255).
const MaxStatusConnections = 1000

// connectionsPerCluster is each cluster's share of MaxStatusConnections: every peer up
// to 32 clusters, at least one.
func connectionsPerCluster(clusters int) int {
	return max(1, MaxStatusConnections/max(1, clusters))
}

// connections are a member's connections as the status lists them, at most limit,
// those not Connected first, and the count of the connected of them all: from its
// Peers when they were read (a member that reports no summary, an observed file), else
// from the summary its Membership reports (strait dns).
func (f *MemberFacts) connections(limit int) ([]straitv1.ConnectionStatus, string) {
	if len(f.Peers) > 0 || f.Membership == nil {
		s := connections.Summarize(connections.OfPeers(f.Peers))
		return connections.List(&s, limit)
	}
	return connections.List(f.Membership.Status.Connections, limit)
}

// exportStatus is an export's entry in the ClusterSet's status.
func exportStatus(e *exportPlan) straitv1.ExportStatus {
	es := straitv1.ExportStatus{Namespace: e.namespace, Name: e.name, Conflict: e.conflictSummary()}
	if len(e.sources) > 0 {
		es.Type = string(e.typ)
	}
	for _, s := range e.sources {
		es.Clusters = append(es.Clusters, s.cluster)
	}
	return es
}

// status is the ClusterSet status the plan implies: per cluster its active gateway,
// global CIDR, connections and the kube-system UID observed there; per export its type,
// sources and conflicts; and the export counts of the summary. What only the hub observes while it reconciles (whether
// it reaches a member, what it wrote and pruned there) is the hub's to add.
func (p *Plan) status() straitv1.ClusterSetStatus {
	st := straitv1.ClusterSetStatus{Clusters: make([]straitv1.ClusterStatus, 0, len(p.clusters)),
		Exports: make([]straitv1.ExportStatus, 0, min(len(p.exports), MaxStatusExports))}
	for _, c := range p.clusters {
		f := p.observed[c]
		cs := straitv1.ClusterStatus{Name: c}
		if a := p.alloc[c]; a != nil {
			cs.GlobalCIDR = a.GlobalCIDR.String()
		}
		gwc := metav1.Condition{Type: straitv1.ConditionGatewayReady, Status: metav1.ConditionFalse,
			Reason: straitv1.ReasonNoActiveGateway, Message: "no gateway node is active"}
		if f != nil {
			cs.KubeSystemUID = string(f.KubeSystemUID)
			if gw := f.activeGateway(); gw != nil {
				cs.ActiveGateway = gw.Spec.NodeName
				gwc.Status, gwc.Reason, gwc.Message = metav1.ConditionTrue, straitv1.ReasonGatewayActive,
					fmt.Sprintf("gateway %s is active at %s", gw.Spec.NodeName, gw.Spec.IP)
			}
			cs.Connections, cs.PeersConnected = f.connections(connectionsPerCluster(len(p.clusters)))
		}
		cs.Conditions = []metav1.Condition{gwc}
		st.Clusters = append(st.Clusters, cs)
	}
	conflicts, invalid := int32(0), int32(0)
	for _, e := range p.exports {
		if len(e.conflicts) > 0 {
			conflicts++
		}
		if len(e.noService) > 0 || len(e.invalidType) > 0 {
			invalid++
		}
	}
	// Exports that need attention come first; the list is capped so that a clusterset
	// with 10,000 exports still fits in one etcd object. Per-export detail is also on
	// each member's ServiceExport conditions. Only the entries shown are built: the hub
	// computes the status at every reconcile.
	needsAttention := func(e *exportPlan) bool { return len(e.conflicts) > 0 || len(e.sources) == 0 }
	for _, attention := range []bool{true, false} {
		for _, e := range p.exports {
			if len(st.Exports) == MaxStatusExports {
				break
			}
			if needsAttention(e) == attention {
				st.Exports = append(st.Exports, exportStatus(e))
			}
		}
	}
	st.Summary = straitv1.ClusterSetSummary{
		Exports:   int32(len(p.exports)),
		Conflicts: conflicts,
		Invalid:   invalid,
	}
	return st
}
