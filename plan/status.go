package plan

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// MaxStatusExports caps ClusterSet status.exports; status.summary.exports counts them all.
const MaxStatusExports = 1000

// status is the ClusterSet status the plan implies: per cluster its active gateway,
// global CIDR, connections and the kube-system UID observed there; per export its type,
// sources and conflicts; and the export counts of the summary. What only the hub observes while it reconciles (whether
// it reaches a member, what it wrote and pruned there) is the hub's to add.
func (p *Plan) status() straitv1.ClusterSetStatus {
	var st straitv1.ClusterSetStatus
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
			for i := range f.Peers {
				peer := &f.Peers[i]
				if peer.Status.State == "" {
					continue
				}
				cs.Connections = append(cs.Connections, straitv1.ConnectionStatus{
					Cluster: peer.Spec.ClusterID, State: peer.Status.State, LatencyMicros: peer.Status.LatencyMicros})
			}
		}
		cs.Conditions = []metav1.Condition{gwc}
		st.Clusters = append(st.Clusters, cs)
	}
	conflicts, invalid := int32(0), int32(0)
	var healthy []straitv1.ExportStatus
	for _, e := range p.exports {
		es := straitv1.ExportStatus{Namespace: e.namespace, Name: e.name, Conflict: e.conflictSummary()}
		if len(e.sources) > 0 {
			es.Type = string(e.typ)
		}
		for _, s := range e.sources {
			es.Clusters = append(es.Clusters, s.cluster)
		}
		if len(e.conflicts) > 0 {
			conflicts++
		}
		if len(e.noService) > 0 || len(e.invalidType) > 0 {
			invalid++
		}
		if len(e.conflicts) > 0 || len(e.sources) == 0 {
			st.Exports = append(st.Exports, es)
		} else {
			healthy = append(healthy, es)
		}
	}
	// Exports that need attention come first; the list is capped so that a clusterset
	// with 10,000 exports still fits in one etcd object. Per-export detail is also on
	// each member's ServiceExport conditions.
	st.Exports = append(st.Exports, healthy...)
	if len(st.Exports) > MaxStatusExports {
		st.Exports = st.Exports[:MaxStatusExports]
	}
	st.Summary = straitv1.ClusterSetSummary{
		Exports:   int32(len(p.exports)),
		Conflicts: conflicts,
		Invalid:   invalid,
	}
	return st
}
