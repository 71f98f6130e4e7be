package controllers

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/plan"
)

// setStatus writes the plan's status, what the connections and writes found per
// cluster, and the ClusterSet's conditions following Flux's rules: Ready=True only when
// every member holds its objects; otherwise Ready=False with Reconciling=True, because
// the hub retries; Stalled is only for specs that cannot work (see stalled).
func (r *ClusterSetReconciler) setStatus(obj *straitv1.ClusterSet, p *plan.Plan, conns map[string]*conn, results map[string]*memberResult) {
	prev := map[string]*straitv1.ClusterStatus{}
	for i := range obj.Status.Clusters {
		prev[obj.Status.Clusters[i].Name] = &obj.Status.Clusters[i]
	}
	spec := map[string]*straitv1.ClusterSpec{}
	for i := range obj.Spec.Clusters {
		spec[obj.Spec.Clusters[i].Name] = &obj.Spec.Clusters[i]
	}
	cs := plan.ClusterSetLabel(clusterSetName(obj))
	st := p.Status
	var failed, unreachable []string
	connected := 0
	for i := range st.Clusters {
		c := &st.Clusters[i]
		res, cn := results[c.Name], conns[c.Name]
		c.KubeConfig = spec[c.Name].KubeConfig.DeepCopy()
		conn := metav1.Condition{Type: straitv1.ConditionConnected, Status: metav1.ConditionTrue,
			Reason: straitv1.ReasonConnected, Message: "the hub reaches the member's API server"}
		ready := metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: straitv1.ReasonApplied}
		switch {
		case res.unreachable:
			unreachable = append(unreachable, c.Name)
			conn.Status, conn.Reason, conn.Message = metav1.ConditionFalse, straitv1.ReasonUnreachable, errString(cn.err)
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, straitv1.ReasonUnreachable,
				"the member keeps what it held when it was last reached"
			if p := prev[c.Name]; p != nil {
				c.Inventory = p.Inventory
			}
			if was := prevCondition(prev[c.Name], straitv1.ConditionConnected); was == nil || was.Status != metav1.ConditionFalse {
				r.recorder.Eventf(obj, nil, "Warning", straitv1.ReasonUnreachable, "Connect", "cluster %s: %s", c.Name, errString(cn.err))
			}
		case res.err != nil:
			connected++
			failed = append(failed, c.Name)
			c.Inventory = res.inventory
			ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, straitv1.ReasonApplyFailed, res.err.Error()
			r.recorder.Eventf(obj, nil, "Warning", straitv1.ReasonApplyFailed, "Apply", "cluster %s: %s", c.Name, res.err)
		default:
			connected++
			c.Inventory = res.inventory
			ready.Message = fmt.Sprintf("%d objects in place", sum(res.inventory))
			if was := prevCondition(prev[c.Name], straitv1.ConditionConnected); was != nil && was.Status == metav1.ConditionFalse {
				r.recorder.Eventf(obj, nil, "Normal", straitv1.ReasonConnected, "Connect", "cluster %s is reachable again", c.Name)
			}
		}
		gw := apimeta.FindStatusCondition(c.Conditions, straitv1.ConditionGatewayReady)
		c.Conditions = mergeConditions(prev[c.Name], obj.Generation, conn, *gw, ready)
	}
	// Clusters that left the spec stay in status until they hold nothing of ours.
	for name, cn := range conns {
		if !cn.removed {
			continue
		}
		res := results[name]
		if res.cleaned {
			r.recorder.Eventf(obj, nil, "Normal", straitv1.ReasonPruning, "Prune", "cluster %s left the clusterset: %d objects removed", name, res.pruned)
			r.members.Forget(members.Key{ClusterSet: clusterSetName(obj), Cluster: name})
			r.applied.Delete(members.Key{ClusterSet: clusterSetName(obj), Cluster: name})
			continue
		}
		msg := "the cluster left the clusterset; the hub removes what it wrote there"
		if res.err != nil {
			msg += ": " + res.err.Error()
		}
		st.Clusters = append(st.Clusters, straitv1.ClusterStatus{Name: name, KubeConfig: cn.kubeConfig.DeepCopy(),
			Conditions: mergeConditions(prev[name], obj.Generation, metav1.Condition{Type: meta.ReadyCondition,
				Status: metav1.ConditionFalse, Reason: straitv1.ReasonPruning, Message: msg})})
		failed = append(failed, name)
	}
	sort.Slice(st.Clusters, func(i, j int) bool { return st.Clusters[i].Name < st.Clusters[j].Name })
	st.Summary.Clusters = fmt.Sprintf("%d/%d", connected, len(obj.Spec.Clusters))

	obj.Status.Clusters, obj.Status.Exports, obj.Status.Summary = st.Clusters, st.Exports, st.Summary
	obj.Status.ObservedGeneration = obj.Generation
	apimeta.RemoveStatusCondition(&obj.Status.Conditions, meta.StalledCondition)
	switch {
	case len(unreachable) > 0 || len(failed) > 0:
		var parts []string
		reason := straitv1.ReasonApplyFailed
		if len(unreachable) > 0 {
			reason = straitv1.ReasonMembersUnreachable
			parts = append(parts, "unreachable: "+strings.Join(unreachable, ", "))
		}
		if len(failed) > 0 {
			parts = append(parts, "not converged: "+strings.Join(failed, ", "))
		}
		msg := strings.Join(parts, "; ")
		setCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, reason, msg)
		setCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, msg)
	default:
		setCondition(obj, meta.ReadyCondition, metav1.ConditionTrue, straitv1.ReasonReconciliationOK,
			fmt.Sprintf("%d clusters and %d exports in place", len(obj.Spec.Clusters), len(st.Exports)))
		apimeta.RemoveStatusCondition(&obj.Status.Conditions, meta.ReconcilingCondition)
	}
	r.changeEvent(obj, results)
	r.metrics.members.WithLabelValues(cs).Set(float64(len(obj.Spec.Clusters)))
	r.metrics.membersConnected.WithLabelValues(cs).Set(float64(connected))
	r.metrics.exports.WithLabelValues(cs).Set(float64(len(st.Exports)))
	if len(unreachable) > 0 {
		r.metrics.errors.WithLabelValues(cs, "unreachable").Add(float64(len(unreachable)))
	}
	if len(failed) > 0 {
		r.metrics.errors.WithLabelValues(cs, "apply").Add(float64(len(failed)))
	}
}

// mergeConditions sets conds over a cluster's previous conditions, so that
// lastTransitionTime only moves when a status changes.
func mergeConditions(prev *straitv1.ClusterStatus, gen int64, conds ...metav1.Condition) []metav1.Condition {
	var out []metav1.Condition
	if prev != nil {
		out = append(out, prev.Conditions...)
	}
	keep := map[string]bool{}
	for _, c := range conds {
		c.ObservedGeneration = gen
		apimeta.SetStatusCondition(&out, c)
		keep[c.Type] = true
	}
	filtered := out[:0]
	for _, c := range out {
		if keep[c.Type] {
			filtered = append(filtered, c)
		}
	}
	return filtered
}

func prevCondition(prev *straitv1.ClusterStatus, typ string) *metav1.Condition {
	if prev == nil {
		return nil
	}
	return apimeta.FindStatusCondition(prev.Conditions, typ)
}

func errString(err error) string {
	if err == nil {
		return "not connected yet"
	}
	return err.Error()
}

func sum(m map[string]int32) int32 {
	var n int32
	for _, v := range m {
		n += v
	}
	return n
}

func apiEqualStatus(a, b *straitv1.ClusterSet) bool {
	return equality.Semantic.DeepEqual(a.Status, b.Status)
}

// changeEvent tells, once per reconcile that wrote something, what changed where.
func (r *ClusterSetReconciler) changeEvent(obj *straitv1.ClusterSet, results map[string]*memberResult) {
	var parts []string
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		res := results[n]
		if res.applied > 0 || res.pruned > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d written, %d pruned", n, res.applied, res.pruned))
		}
	}
	if len(parts) > 0 {
		r.recorder.Eventf(obj, nil, "Normal", straitv1.ReasonApplied, "Apply", "%s", strings.Join(parts, "; "))
	}
}
