package controllers

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// histogram is the count and sum of one ClusterSet's series of a histogram family.
func histogram(t *testing.T, reg *prometheus.Registry, name string) (count uint64, sum float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			count += h.GetSampleCount()
			sum += h.GetSampleSum()
		}
	}
	return count, sum
}

// A generation or an export is timed from the reconcile that first saw it to the first
// that found every member holding it, once; what the process's first reconcile found
// is not timed; a member that does not hold holds the observation back.
func TestPropagationIsTimedOnTheHubsClock(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	const cs = "strait-system.demo"
	check := func(step string, wantSets uint64, setSum float64, wantExports uint64, exportSum float64) {
		t.Helper()
		if n, s := histogram(t, reg, "strait_hub_clusterset_propagation_seconds"); n != wantSets || s != setSum {
			t.Errorf("%s: clusterset propagation %d observations, sum %v; want %d, %v", step, n, s, wantSets, setSum)
		}
		if n, s := histogram(t, reg, "strait_hub_export_propagation_seconds"); n != wantExports || s != exportSum {
			t.Errorf("%s: export propagation %d observations, sum %v; want %d, %v", step, n, s, wantExports, exportSum)
		}
	}
	m.recordPropagation(cs, 1, []string{"sample/a"}, at(0), true, at(0.2))
	check("the first reconcile", 0, 0, 0, 0)
	m.recordPropagation(cs, 2, []string{"sample/a"}, at(10), false, at(10.5))
	check("generation 2, a member behind", 0, 0, 0, 0)
	m.recordPropagation(cs, 2, []string{"sample/a"}, at(12), true, at(13))
	check("generation 2 everywhere", 1, 3, 0, 0)
	m.recordPropagation(cs, 2, []string{"sample/a"}, at(20), true, at(20.1))
	check("a resync", 1, 3, 0, 0)
	m.recordPropagation(cs, 2, []string{"sample/a", "sample/b"}, at(30), true, at(30.5))
	check("export b, made in a member", 1, 3, 1, 0.5)
	m.recordPropagation(cs, 3, []string{"sample/b"}, at(40), true, at(40.25))
	m.recordPropagation(cs, 4, []string{"sample/a", "sample/b"}, at(50), true, at(51))
	check("a removed, then exported again", 3, 4.25, 2, 1.5)
	// A member's ServiceExport is timed from the watch event that brought it, the wait
	// for the reconcile that serves it included; one of an export served already
	// changes nothing.
	m.exportArrived(cs, "sample/c", at(59.6))
	m.exportArrived(cs, "sample/a", at(59.7))
	m.exportArrived(cs, "sample/c", at(59.8))
	m.recordPropagation(cs, 4, []string{"sample/a", "sample/b", "sample/c"}, at(60), true, at(60.5))
	check("c made in a member while a reconcile ran", 3, 4.25, 3, 2.4)
	// An arrival that no reconcile served for longer than arrivalMaxAge is forgotten
	// when the next comes: it does not stretch a later export of that name.
	m.exportArrived(cs, "sample/d", at(70))
	m.exportArrived(cs, "sample/e", at(70).Add(arrivalMaxAge+time.Second))
	m.recordPropagation(cs, 4, []string{"sample/a", "sample/b", "sample/c", "sample/d"}, at(400), true, at(400.5))
	check("d served long after its ServiceExport came", 3, 4.25, 4, 2.9)
	m.forget(cs)
	check("the ClusterSet gone", 0, 0, 0, 0)
	// Before the process's first reconcile nothing is noted.
	m.exportArrived(cs, "sample/f", at(500))
	m.recordPropagation(cs, 5, []string{"sample/f"}, at(501), true, at(501.5))
	m.recordPropagation(cs, 5, []string{"sample/f", "sample/g"}, at(510), true, at(510.5))
	check("a new process", 0, 0, 1, 0.5)
}
