package plan

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// MaxStatusExports caps ClusterSet status.exports.
const MaxStatusExports = 1000

// status is the ClusterSet status the plan implies: per cluster its reachability,
// active gateway, global CIDR and connections; per export its type, sources and
// conflicts; and the summary for print columns.
func (p *Plan) status() straitv1.ClusterSetStatus {
	var st straitv1.ClusterSetStatus
	connected := 0
	for _, c := range p.clusters {
		f := p.observed[c]
		cs := straitv1.ClusterStatus{Name: c}
		if a := p.alloc[c]; a != nil {
			cs.GlobalCIDR = a.GlobalCIDR.String()
		}
		conn := metav1.Condition{Type: straitv1.ConditionConnected, Status: metav1.ConditionUnknown,
			Reason: straitv1.ReasonUnreachable, Message: "the member was not observed"}
		gwc := metav1.Condition{Type: straitv1.ConditionGatewayReady, Status: metav1.ConditionFalse,
			Reason: straitv1.ReasonNoActiveGateway, Message: "no gateway node is active"}
		if f != nil {
			if f.Reachable {
				connected++
				conn.Status, conn.Reason, conn.Message = metav1.ConditionTrue, straitv1.ReasonConnected, "the hub reaches the member's API server"
			} else {
				conn.Status, conn.Message = metav1.ConditionFalse, "the hub cannot reach the member's API server"
			}
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
		cs.Conditions = []metav1.Condition{conn, gwc}
		st.Clusters = append(st.Clusters, cs)
	}
	conflicts := int32(0)
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
		Clusters:  fmt.Sprintf("%d/%d", connected, len(p.clusters)),
		Exports:   int32(len(p.exports)),
		Conflicts: conflicts,
	}
	return st
}
