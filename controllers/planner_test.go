package controllers

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/bigset"
)

// The hub's reconciles of a ClusterSet plan through one planner, which resolves again
// only the exports whose inputs changed, and strait_hub_export_resolutions_total says
// how many it resolved and took over: all 60 resolved first, none after a reconcile that
// changed nothing, one after one service's change; a ClusterSet deleted leaves no series.
func TestReconcilesResolveOnlyWhatChanged(t *testing.T) {
	cs, obs := bigset.New(6, 60)
	spec, errs := plan.Check(cs)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := &ClusterSetReconciler{metrics: metrics}
	key := types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name}
	label := plan.ClusterSetLabel(key)
	count := func(outcome string) float64 {
		return testutil.ToFloat64(metrics.resolutions.WithLabelValues(label, outcome))
	}
	for _, step := range []struct {
		name             string
		change           func()
		resolved, reused float64 // the totals after the step
	}{
		{"the first reconcile", func() {}, 60, 0},
		{"a reconcile with nothing changed", func() {}, 60, 60},
		{"a new cluster IP of one service in c001", func() { bigset.ChangeServiceIP(obs, 1, "10.1.255.1") }, 61, 119},
	} {
		step.change()
		if _, errs := r.computePlan(key, spec, obs); len(errs) > 0 {
			t.Fatalf("%s: %v", step.name, errs.ToAggregate())
		}
		if got, reused := count("resolved"), count("reused"); got != step.resolved || reused != step.reused {
			t.Errorf("after %s: %v resolved and %v reused in all, want %v and %v", step.name, got, reused, step.resolved, step.reused)
		}
	}
	metrics.forget(label)
	if n := testutil.CollectAndCount(metrics.resolutions); n != 0 {
		t.Errorf("%d series of strait_hub_export_resolutions_total left after the ClusterSet went", n)
	}
}
