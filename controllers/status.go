package controllers

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/plan"
)

// setStatus writes the ClusterSet status: the plan's (gateways, connections, exports
// and their counts) and what only this reconcile observed, per cluster whether the hub
// reached it (Connected) and what writing it did (Ready, inventory), and the clusters
// that left but still hold objects. The ClusterSet's conditions follow Flux's rules:
// Ready=True only when every member holds its objects; otherwise Ready=False with
// Reconciling=True, because the hub retries; Stalled is only for specs that cannot work
// (see stalled). It returns every cluster's entry: status.clusters lists
// MaxStatusClusters of them, and each goes into its ClusterSetMember.
//
// prev is every cluster's last entry; seen is when the reconcile began: the
// propagation of what it saw first is timed from then.
func (r *ClusterSetReconciler) setStatus(obj *straitv1.ClusterSet, p *plan.Plan, conns map[string]*conn, results map[string]*memberResult,
	prev map[string]*straitv1.ClusterStatus, seen time.Time) []straitv1.ClusterStatus {
	// The plan's entries are copied, not what they share with the plan: memberStatus
	// sets an entry's fields and changes nothing they point to.
	st := p.Status
	st.Clusters = slices.Clone(p.Status.Clusters)
	var t tally
	for i := range st.Clusters {
		c := &st.Clusters[i]
		r.memberStatus(obj, c, prev[c.Name], conns[c.Name], results[c.Name], &t)
	}
	st.Clusters = append(st.Clusters, leftClusters(obj, prev, conns, results, &t)...)
	sort.Slice(st.Clusters, func(i, j int) bool { return st.Clusters[i].Name < st.Clusters[j].Name })
	st.Summary.Clusters = fmt.Sprintf("%d/%d", t.connected, len(obj.Spec.Clusters))

	obj.Status.Clusters, obj.Status.Exports, obj.Status.Summary = plan.StatusClusters(st.Clusters), st.Exports, st.Summary
	obj.Status.ObservedGeneration = obj.Generation
	apimeta.RemoveStatusCondition(&obj.Status.Conditions, meta.StalledCondition)
	setReadiness(obj, st.Summary, t)
	r.changeEvent(obj, results)
	r.recordStatus(plan.ClusterSetLabel(clusterSetName(obj)), len(obj.Spec.Clusters), st.Summary, t)
	r.recordMembers(obj, st.Clusters, p.ServedExports(), seen)
	return st.Clusters
}

// recordMembers sets the per-member series from every cluster's status just computed: Connected, and
// Ready (every object of this generation in place); and, once every member is Ready,
// how long the generation and the exports seen first at seen took to propagate.
func (r *ClusterSetReconciler) recordMembers(obj *straitv1.ClusterSet, clusters []straitv1.ClusterStatus, exports []string, seen time.Time) {
	var members []memberState
	all := len(clusters) > 0
	for _, c := range clusters {
		ms := memberState{name: c.Name,
			connected: apimeta.IsStatusConditionTrue(c.Conditions, straitv1.ConditionConnected),
			holds:     apimeta.IsStatusConditionTrue(c.Conditions, meta.ReadyCondition)}
		all = all && ms.holds
		members = append(members, ms)
	}
	cs, now := plan.ClusterSetLabel(clusterSetName(obj)), time.Now()
	r.metrics.recordMembers(cs, obj.Generation, members, now)
	r.metrics.recordPropagation(cs, obj.Generation, exports, seen, all, now)
}

// tally counts, over one reconcile, the members the hub reached and lists those it did
// not reach or could not bring to their desired state.
type tally struct {
	connected           int
	unreachable, failed []string
}

// memberStatus adds to a cluster's planned status what this reconcile found there:
// Connected, Ready and the inventory, and tells with an event when the hub lost or
// regained the member.
func (r *ClusterSetReconciler) memberStatus(obj *straitv1.ClusterSet, c, prev *straitv1.ClusterStatus, cn *conn, res *memberResult, t *tally) {
	c.KubeConfig = cn.kubeConfig.DeepCopy()
	conn := metav1.Condition{Type: straitv1.ConditionConnected, Status: metav1.ConditionTrue,
		Reason: straitv1.ReasonConnected, Message: "the hub reaches the member's API server"}
	ready := metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: straitv1.ReasonApplied}
	wasConnected := prevCondition(prev, straitv1.ConditionConnected)
	switch {
	case res.unreachable:
		t.unreachable = append(t.unreachable, c.Name)
		conn.Status, conn.Reason, conn.Message = metav1.ConditionFalse, straitv1.ReasonUnreachable, errString(cn.err)
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, straitv1.ReasonUnreachable,
			"the member keeps what it held when it was last reached"
		if prev != nil {
			c.Inventory = prev.Inventory
		}
		if wasConnected == nil || wasConnected.Status != metav1.ConditionFalse {
			r.event(obj, "Warning", straitv1.ReasonUnreachable, "Connect", "cluster %s: %s", c.Name, errString(cn.err))
		}
	case res.err != nil:
		t.connected++
		t.failed = append(t.failed, c.Name)
		c.Inventory = res.inventory
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, straitv1.ReasonApplyFailed, res.err.Error()
		r.event(obj, "Warning", straitv1.ReasonApplyFailed, "Apply", "cluster %s: %s", c.Name, res.err)
	default:
		t.connected++
		c.Inventory = res.inventory
		ready.Message = fmt.Sprintf("%d objects in place", sum(res.inventory))
		if wasConnected != nil && wasConnected.Status == metav1.ConditionFalse {
			r.event(obj, "Normal", straitv1.ReasonConnected, "Connect", "cluster %s is reachable again", c.Name)
		}
	}
	gw := apimeta.FindStatusCondition(c.Conditions, straitv1.ConditionGatewayReady)
	c.Conditions = mergeConditions(prev, obj.Generation, conn, *gw, ready)
}

// leftClusters are the clusters that left the spec but still hold objects of the
// ClusterSet: they stay in status, not ready, until the hub has removed them all.
func leftClusters(obj *straitv1.ClusterSet, prev map[string]*straitv1.ClusterStatus, conns map[string]*conn, results map[string]*memberResult, t *tally) []straitv1.ClusterStatus {
	var out []straitv1.ClusterStatus
	for name, cn := range conns {
		res := results[name]
		if !cn.removed || res.cleaned {
			continue
		}
		msg := "the cluster left the clusterset; the hub removes what it wrote there"
		if res.err != nil {
			msg += ": " + res.err.Error()
		}
		out = append(out, straitv1.ClusterStatus{Name: name, KubeConfig: cn.kubeConfig.DeepCopy(),
			Conditions: mergeConditions(prev[name], obj.Generation, metav1.Condition{Type: meta.ReadyCondition,
				Status: metav1.ConditionFalse, Reason: straitv1.ReasonPruning, Message: msg})})
		t.failed = append(t.failed, name)
	}
	return out
}

// setReadiness sets the ClusterSet's Ready and Reconciling conditions from the tally;
// the export count is the summary's, which counts every export, not the capped list.
func setReadiness(obj *straitv1.ClusterSet, summary straitv1.ClusterSetSummary, t tally) {
	if len(t.unreachable) == 0 && len(t.failed) == 0 {
		setCondition(obj, meta.ReadyCondition, metav1.ConditionTrue, straitv1.ReasonReconciliationOK,
			fmt.Sprintf("%d clusters and %d exports in place", len(obj.Spec.Clusters), summary.Exports))
		apimeta.RemoveStatusCondition(&obj.Status.Conditions, meta.ReconcilingCondition)
		return
	}
	var parts []string
	reason := straitv1.ReasonApplyFailed
	if len(t.unreachable) > 0 {
		reason = straitv1.ReasonMembersUnreachable
		parts = append(parts, "unreachable: "+strings.Join(t.unreachable, ", "))
	}
	if len(t.failed) > 0 {
		parts = append(parts, "not converged: "+strings.Join(t.failed, ", "))
	}
	msg := strings.Join(parts, "; ")
	setCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, reason, msg)
	setCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, meta.ProgressingWithRetryReason, msg)
}

// recordStatus sets the ClusterSet's gauges and counts its member errors.
func (r *ClusterSetReconciler) recordStatus(cs string, members int, summary straitv1.ClusterSetSummary, t tally) {
	r.metrics.members.WithLabelValues(cs).Set(float64(members))
	r.metrics.membersConnected.WithLabelValues(cs).Set(float64(t.connected))
	r.metrics.exports.WithLabelValues(cs).Set(float64(summary.Exports))
	r.metrics.conflicts.WithLabelValues(cs).Set(float64(summary.Conflicts))
	r.metrics.invalid.WithLabelValues(cs).Set(float64(summary.Invalid))
	if len(t.unreachable) > 0 {
		r.metrics.errors.WithLabelValues(cs, "unreachable").Add(float64(len(t.unreachable)))
	}
	if len(t.failed) > 0 {
		r.metrics.errors.WithLabelValues(cs, "apply").Add(float64(len(t.failed)))
	}
}

// mergeConditions sets conds over a cluster's previous conditions, so that
// lastTransitionTime only moves when a status changes.
func mergeConditions(prev *straitv1.ClusterStatus, gen int64, conds ...metav1.Condition) []metav1.Condition {
	var had []metav1.Condition
	if prev != nil {
		had = prev.Conditions
	}
	out := make([]metav1.Condition, len(had), len(had)+len(conds))
	copy(out, had)
	for _, c := range conds {
		c.ObservedGeneration = gen
		apimeta.SetStatusCondition(&out, c)
	}
	dropped := func(c metav1.Condition) bool {
		return !slices.ContainsFunc(conds, func(k metav1.Condition) bool { return k.Type == c.Type })
	}
	return slices.DeleteFunc(out, dropped)
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
		r.event(obj, "Normal", straitv1.ReasonApplied, "Apply", "%s", strings.Join(parts, "; "))
	}
}
