package controllers

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestAMemberThatLeftLosesItsSeries: the per-member series are set in place at each
// reconcile, and those of a member no longer in the ClusterSet go; another ClusterSet's
// stay.
func TestAMemberThatLeftLosesItsSeries(t *testing.T) {
	t.Parallel()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1700000000, 0)
	m.recordMembers("ns.other", 1, []memberState{{name: "x", connected: true, holds: true}}, now)
	m.recordMembers("ns.a", 1, []memberState{{name: "c1", connected: true, holds: true}, {name: "c2", connected: true}}, now)
	if n := testutil.CollectAndCount(m.memberConnected); n != 3 {
		t.Fatalf("%d series of strait_hub_member_connected, want 3", n)
	}
	for _, c := range []string{"c1", "c2"} {
		m.applied.WithLabelValues("ns.a", c).Add(3)
		m.memberPasses.WithLabelValues("ns.a", c).Inc()
		m.reporting.WithLabelValues("ns.a", c).Set(1)
		m.reportDrift.WithLabelValues("ns.a", c)
	}
	m.recordMembers("ns.a", 2, []memberState{{name: "c1", connected: false, holds: false}}, now.Add(time.Minute))
	if n := testutil.CollectAndCount(m.memberConnected); n != 2 {
		t.Errorf("%d series of strait_hub_member_connected after c2 left, want 2 (c1, and x of the other ClusterSet)", n)
	}
	// Its passes' series go too; c1's stay.
	for name, c := range map[string]prometheus.Collector{"strait_hub_objects_applied_total": m.applied,
		"strait_hub_member_applies_total": m.memberPasses, "strait_hub_member_reporting": m.reporting,
		"strait_hub_member_report_drift_total": m.reportDrift} {
		if n := testutil.CollectAndCount(c); n != 1 {
			t.Errorf("%d series of %s after c2 left, want 1 (c1's)", n, name)
		}
	}
	if got := testutil.ToFloat64(m.memberConnected.WithLabelValues("ns.a", "c1")); got != 0 {
		t.Errorf("c1 connected = %v, want 0", got)
	}
	// c1 did not hold generation 2: its last held generation and when stay.
	if got := testutil.ToFloat64(m.memberGeneration.WithLabelValues("ns.a", "c1")); got != 1 {
		t.Errorf("c1's generation held = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.memberAppliedAt.WithLabelValues("ns.a", "c1")); got != float64(now.Unix()) {
		t.Errorf("c1 applied at %v, want %v", got, now.Unix())
	}
	if n := testutil.CollectAndCount(m.memberGeneration); n != 2 {
		t.Errorf("%d series of the generation held, want 2", n)
	}
}
