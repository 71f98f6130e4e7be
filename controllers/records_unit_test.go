package controllers

import (
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// A ClusterSetMember whose change is in counts alone (an export's: the inventory, the
// number in Ready's message, the generation) may wait its wave; any other change may
// not.
func TestRecordCountsAreTheOnlyChangeThatWaits(t *testing.T) {
	record := func(gen int64, objects int32, ready metav1.ConditionStatus, reason, msg string) *straitv1.ClusterSetMember {
		return &straitv1.ClusterSetMember{
			Spec: straitv1.ClusterSetMemberSpec{ClusterSet: "set", Cluster: "c1"},
			Status: straitv1.ClusterStatus{Name: "c1", Inventory: map[string]int32{"ServiceImport": objects},
				Conditions: []metav1.Condition{
					{Type: straitv1.ConditionConnected, Status: metav1.ConditionTrue, Reason: straitv1.ReasonConnected, ObservedGeneration: gen},
					{Type: meta.ReadyCondition, Status: ready, Reason: reason, Message: msg, ObservedGeneration: gen},
				}},
		}
	}
	have := record(4, 10, metav1.ConditionTrue, straitv1.ReasonApplied, "10 objects in place")
	waits := map[string]*straitv1.ClusterSetMember{
		"an export more": record(5, 11, metav1.ConditionTrue, straitv1.ReasonApplied, "11 objects in place"),
	}
	now := map[string]*straitv1.ClusterSetMember{
		"Ready turned false": record(5, 11, metav1.ConditionFalse, straitv1.ReasonApplyFailed, "refused"),
		"a new gateway": func() *straitv1.ClusterSetMember {
			r := record(4, 10, metav1.ConditionTrue, straitv1.ReasonApplied, "10 objects in place")
			r.Status.ActiveGateway = "node-2"
			return r
		}(),
		"another cluster": func() *straitv1.ClusterSetMember {
			r := record(4, 10, metav1.ConditionTrue, straitv1.ReasonApplied, "10 objects in place")
			r.Status.KubeSystemUID = "other"
			return r
		}(),
	}
	for what, want := range waits {
		if sameRecord(have, want) || !sameRecord(have, recordCounts(want, have)) {
			t.Errorf("%s: a change in counts alone, want it to wait", what)
		}
	}
	for what, want := range now {
		if sameRecord(have, recordCounts(want, have)) {
			t.Errorf("%s: taken for a change in counts alone", what)
		}
	}
	if want := waits["an export more"]; want.Status.Inventory["ServiceImport"] != 11 || want.Status.Conditions[1].ObservedGeneration != 5 {
		t.Errorf("recordCounts changed the record it was given: %+v", want.Status)
	}

	times := &recordTimes{at: map[string]time.Time{}}
	a, b, c := record(1, 1, metav1.ConditionTrue, straitv1.ReasonApplied, ""), record(1, 1, metav1.ConditionTrue, straitv1.ReasonApplied, ""),
		record(1, 1, metav1.ConditionTrue, straitv1.ReasonApplied, "")
	a.Spec.Cluster, b.Spec.Cluster, c.Spec.Cluster = "a", "b", "c"
	times.wrote("a")
	times.at["b"] = time.Now().Add(-time.Minute)
	got := times.oldestFirst([]*straitv1.ClusterSetMember{a, b, c})
	if got[0].Spec.Cluster != "c" || got[1].Spec.Cluster != "b" || got[2].Spec.Cluster != "a" {
		t.Errorf("order %s %s %s, want c (never written), b, a", got[0].Spec.Cluster, got[1].Spec.Cluster, got[2].Spec.Cluster)
	}
}
