package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	coordinationv1 "k8s.io/api/coordination/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kfields "k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/source"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/nodeagent/gateway"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// promScalar is the value of a query that sums to one series in cluster's Prometheus (0
// when it has none yet).
func promScalar(t *testing.T, cluster, query string) float64 {
	t.Helper()
	api := env.Prometheus(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	v, _, _, err := api.Query(ctx, query, time.Now())
	if err != nil {
		t.Fatalf("%s's Prometheus: %s: %v", cluster, query, err)
	}
	vec, _ := v.(model.Vector)
	if len(vec) == 0 {
		return 0
	}
	return float64(vec[0].Value)
}

// histogramTotals are a histogram family's _count and _sum over all its series.
type histogramTotals struct{ count, sum float64 }

// histogramNow is family's totals over the series matching selector ("" or a PromQL
// label selector such as {node="c2-gw-1"}): a daemon that goes takes its series with it,
// so a total over every daemon can drop while another's grows.
func histogramNow(t *testing.T, cluster, family, selector string) histogramTotals {
	t.Helper()
	return histogramTotals{promScalar(t, cluster, "sum("+family+"_count"+selector+")"), promScalar(t, cluster, "sum("+family+"_sum"+selector+")")}
}

// oneObservation waits until cluster's Prometheus has scraped exactly one observation of
// family more than before, and returns its value (the increase of _sum).
func oneObservation(t *testing.T, cluster, family, selector string, before histogramTotals) float64 {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		now := histogramNow(t, cluster, family, selector)
		switch n := now.count - before.count; {
		case n == 1:
			return now.sum - before.sum
		case n > 1:
			t.Fatalf("%s: %s counted %v observations, want the one event's", cluster, family, n)
		case time.Now().After(deadline):
			t.Fatalf("%s: %s counted no observation in 15 s (count %v)", cluster, family, now.count)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// exemplars are the values of the exemplars of family's buckets in cluster's Prometheus
// since from, by the value of their label name.
func exemplars(t *testing.T, cluster, family, name string, from time.Time) map[string]float64 {
	t.Helper()
	api := env.Prometheus(t, cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := api.QueryExemplars(ctx, family+"_bucket", from, time.Now())
	if err != nil {
		t.Fatalf("%s's Prometheus: the exemplars of %s: %v", cluster, family, err)
	}
	out := map[string]float64{}
	for _, r := range res {
		for _, e := range r.Exemplars {
			if v, ok := e.Labels[model.LabelName(name)]; ok {
				out[string(v)] = float64(e.Value)
			}
		}
	}
	return out
}

// hasExemplar fails t unless family's one observation, of value v, came with the
// exemplar name=value.
func hasExemplar(t *testing.T, cluster, family, name, value string, v float64, from time.Time) {
	t.Helper()
	got := exemplars(t, cluster, family, name, from)
	if e, ok := got[value]; !ok || math.Abs(e-v) > 1e-6 {
		t.Errorf("%s: %s's observation %.3fs: want an exemplar %s=%q of that value, have %v", cluster, family, v, name, value, got)
	}
}

// settledHistogram is a family's totals once two scrapes have passed, so that an
// observation made just before is in them and not taken for the next event's.
func settledHistogram(t *testing.T, cluster, family, selector string) histogramTotals {
	t.Helper()
	time.Sleep(2*lab.PrometheusInterval + 200*time.Millisecond)
	return histogramNow(t, cluster, family, selector)
}

// window is when an event happened as far as the test could see it from outside: after
// lo and by hi. A polled event: lo is the start of the last poll that did not find it,
// hi the end of the first that did; a call the test made: lo and hi are the call's start
// and return. Its width is the test's own uncertainty, measured in the run (a poll of
// four API reads takes tens of milliseconds on an idle machine and hundreds on a loaded
// one), not guessed.
type window struct{ lo, hi time.Time }

// at is a window of no width: an instant both the histogram's owner and the test read
// from one record (a Lease's renewTime).
func at(t time.Time) window { return window{t, t} }

// poller tracks a polled condition's window: call it with each poll's start and outcome;
// the window is known once a poll found the condition.
type poller struct {
	lastFalse time.Time
	found     window
}

// saw records one poll, started at start, that found the condition (ok) or not.
func (p *poller) saw(start time.Time, ok bool) {
	switch {
	case !p.found.hi.IsZero():
	case ok:
		p.found = window{lo: p.lastFalse, hi: time.Now()}
		if p.found.lo.IsZero() {
			p.found.lo = start
		}
	default:
		p.lastFalse = start
	}
}

func (p *poller) done() bool { return !p.found.hi.IsZero() }

// sloTolerance: how much later than the events the test sees the histogram's owner may
// start its clock (early: its watch's delivery and its queue, by which its observation
// may fall short of the interval between the events) and stop it (late: the pass that
// finds what it wrote, by which the observation may exceed it). The test's own
// uncertainty is not in it: that is the windows', measured.
type sloTolerance struct{ early, late time.Duration }

// check fails t unless the histogram's observation (seconds) lies within what the
// test saw: from the earliest end after the latest start, less early, to the latest
// end after the earliest start, plus late. NaN and negative observations fail.
func (tol sloTolerance) check(t *testing.T, what string, metric float64, from, to window) {
	t.Helper()
	got := time.Duration(metric * float64(time.Second))
	low, high := to.lo.Sub(from.hi)-tol.early, to.hi.Sub(from.lo)+tol.late
	t.Logf("%s: the histogram's observation %s; the test saw the events %s to %s apart, so want [%s, %s]", what, got.Round(time.Millisecond),
		to.lo.Sub(from.hi).Round(time.Millisecond), to.hi.Sub(from.lo).Round(time.Millisecond), low.Round(time.Millisecond), high.Round(time.Millisecond))
	if math.IsNaN(metric) || metric < 0 || got < low || got > high {
		t.Errorf("%s: the histogram observed %v s, want within [%s, %s]: the events %s to %s apart as the test saw them, less %s early, plus %s late",
			what, metric, low.Round(time.Millisecond), high.Round(time.Millisecond), to.lo.Sub(from.hi).Round(time.Millisecond),
			to.hi.Sub(from.lo).Round(time.Millisecond), tol.early, tol.late)
	}
}

// TestSLOMetricsAgreeWithTheTests: one event of each kind the hub's and the agents' SLO
// histograms time, measured by the test from outside as well, against the histogram's
// one observation read through the lab's Prometheus.
func TestSLOMetricsAgreeWithTheTests(t *testing.T) {
	env.Require(t)
	// What each event's histogram observed, by strait show slo's name of it: show slo
	// must count at least these and show a maximum no smaller than the largest.
	seen := map[string][]float64{}
	t.Run("a pushed export reaches every member", func(t *testing.T) {
		set, export := pushPropagation(t)
		seen["ClusterSet into every member"] = append(seen["ClusterSet into every member"], set)
		seen["export into every member"] = append(seen["export into every member"], export)
	})
	t.Run("a member's ServiceExport reaches every member and its DNS", func(t *testing.T) {
		seen["export into every member"] = append(seen["export into every member"], memberExportPropagation(t))
	})
	t.Run("a gateway crash", func(t *testing.T) { seen["failover"] = append(seen["failover"], crashFailover(t)) })
	// After both events: every panel has something to draw, and strait show slo has
	// both to show.
	t.Run("every dashboard panel has data", dashboardHasData)
	t.Run("strait show slo", func(t *testing.T) { showSLO(t, seen) })
}

// showSLO: `strait show slo` against the hub's Prometheus on the host (the lab daemon's
// forwarder, as lab up prints it) lists the events just caused, with their counts and
// percentiles: of each SLO the test timed (seen, its histogram's observations), at
// least that many observations in the window, a p99 no larger than the maximum, and a
// maximum (the upper bound of the highest bucket observed) no smaller than the largest
// observation. A figure read from the wrong series, or a count that misses an event,
// fails.
func showSLO(t *testing.T, seen map[string][]float64) {
	rec, err := env.Lab.State().ReadRecord()
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d", rec.PrometheusHostPort())
	// A clusterset.local question of c1's own, so that its answer time has an
	// observation the window sees (those of lab up came before Prometheus's first
	// scrape), then two scrapes and the federation's.
	lookup, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Whatever the answer (a test before may have left the name unexported): strait dns
	// answering is what counts.
	if _, err := labtest.LookupInPod(lookup, env.SourcePods(t, "c1")[0].NS, "whereami-cs.sample.svc.clusterset.local"); err != nil {
		t.Logf("the lookup from c1: %v", err)
	}
	time.Sleep(3*lab.PrometheusInterval + 500*time.Millisecond)
	out, err := exec.Command(env.Strait, "show", "slo", "--prometheus", url, "-o", "json").Output()
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 { // 1: an alert firing, which the table says
			t.Fatalf("strait show slo --prometheus %s: %v", url, err)
		}
	}
	var r struct {
		SLOs []struct {
			SLO, For string
			Count    float64
			P99      float64 `json:"p99Seconds"`
			Max      float64 `json:"maxSeconds"`
		} `json:"slos"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("strait show slo -o json: %v\n%s", err, out)
	}
	for _, want := range []struct{ slo, of string }{
		{"ClusterSet into every member", straitv1.SystemNamespace + ".demo"},
		{"export into every member", straitv1.SystemNamespace + ".demo"},
		{"change into DNS answers", "c1"},
		{"failover", "c2/wireguard"},
		{"DNS answer", "c1"},
	} {
		found := false
		for _, s := range r.SLOs {
			if s.SLO != want.slo || s.For != want.of {
				continue
			}
			found = s.Count >= 1 && s.P99 > 0
			t.Logf("%s for %s: %v observations, p99 %.3fs, max %.3fs; the test's events: %v", s.SLO, s.For, s.Count, s.P99, s.Max, seen[s.SLO])
			if events := seen[s.SLO]; len(events) > 0 {
				if s.Count < float64(len(events)) || s.P99 > s.Max || s.Max < slices.Max(events) {
					t.Errorf("strait show slo: %s for %s: %v observations, p99 %.3fs, max %.3fs; want at least %d, p99 ≤ max, max ≥ %.3fs (the test's events: %v)",
						s.SLO, s.For, s.Count, s.P99, s.Max, len(events), slices.Max(events), events)
				}
			}
		}
		if !found {
			t.Errorf("strait show slo has no %q for %s with an observation and a p99:\n%s", want.slo, want.of, out)
		}
	}
}

// dashboardHasData runs every query of the monitoring component's dashboards against
// the hub's Prometheus, which federates the members', as Grafana would: each must
// parse and return series.
func dashboardHasData(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(env.Root, "kustomize", "components", "monitoring", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards (%v)", err)
	}
	// A clusterset.local question in every member, so that each one's answer-time and
	// snapshot-age panels have an observation in their windows (whatever the answer):
	// a panel without data fails below, NaN included, rather than pass on another
	// test's traffic. Then two scrapes and the federation's.
	for _, c := range members() {
		lookup, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := labtest.LookupInPod(lookup, env.SourcePods(t, c)[0].NS, "whereami-cs.sample.svc.clusterset.local"); err != nil {
			t.Logf("the lookup from %s: %v", c, err)
		}
		cancel()
	}
	time.Sleep(3*lab.PrometheusInterval + 500*time.Millisecond)
	api := env.Prometheus(t, labtest.HubCluster)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []struct {
				Title, Type string
				Targets     []struct{ Expr string }
			}
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		queries := 0
		for _, p := range d.Panels {
			for _, q := range p.Targets {
				queries++
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				v, _, _, err := api.Query(ctx, q.Expr, time.Now())
				cancel()
				vec, _ := v.(model.Vector)
				switch {
				case err != nil:
					t.Errorf("%s: panel %q: %s: %v", filepath.Base(f), p.Title, q.Expr, err)
				case len(vec) == 0:
					t.Errorf("%s: panel %q: %s returns no series", filepath.Base(f), p.Title, q.Expr)
				}
				for _, s := range vec {
					if math.IsNaN(float64(s.Value)) || math.IsInf(float64(s.Value), 0) {
						t.Errorf("%s: panel %q: %s returns %v for %v: no figure to draw", filepath.Base(f), p.Title, q.Expr, s.Value, s.Metric)
					}
				}
			}
		}
		t.Logf("%s: %d panels, %d queries, each answered with series", filepath.Base(f), len(d.Panels), queries)
	}
}

// pushPropagation: from the ClusterSet's new generation in the hub (the test watches
// for it every 10 ms) to c2's exported service's ServiceImport in both members and its
// EndpointSlice in c1 (polled every 10 ms), against strait_hub_clusterset_propagation_seconds
// and strait_hub_export_propagation_seconds, which time from the reconcile that saw the
// generation (or the export) to the one that found every member holding it.
//
// Tolerance: the hub starts its clock when its reconcile starts, after its watch and
// queue (a few ms, later than the test's 10-ms poll can see: early 100 ms), and stops it
// after every object of every member is applied (the derived Service and its slices
// after the import, and the hub's checks of each member), which the test's three objects
// do not all show (late 400 ms: 17-177 ms seen).
func pushPropagation(t *testing.T) (set, export float64) {
	env.RestoreClusterSetSpec(t)
	const svc = "whereami-slo"
	exportNew(t, svc)
	const sets, exports = "strait_hub_clusterset_propagation_seconds", "strait_hub_export_propagation_seconds"
	beforeSets, beforeExports := settledHistogram(t, labtest.HubCluster, sets, ""), histogramNow(t, labtest.HubCluster, exports, "")
	hub, c1, c2 := env.Client(t, labtest.HubCluster), env.Client(t, "c1"), env.Client(t, "c2")
	gen := env.ClusterSet(t).Generation
	env.PushClusterSet(t, labtest.ChangeClusterSet(t, env.RepoClusterSet(t), func(cs *straitv1.ClusterSet) { withExport(cs, svc, true) }),
		"e2e: export "+svc+" to time its propagation")
	ctx := context.Background()
	var generation, everywhere poller
	key := client.ObjectKey{Namespace: lab.SampleNamespace, Name: svc}
	for deadline := time.Now().Add(time.Minute); !everywhere.done(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the export of %s did not reach both members in a minute (generation seen %v)", svc, generation.done())
		}
		start := time.Now()
		if !generation.done() {
			list := &straitv1.ClusterSetList{}
			generation.saw(start, hub.List(ctx, list) == nil && len(list.Items) == 1 && list.Items[0].Generation > gen)
			if generation.done() {
				everywhere.lastFalse = generation.found.lo
			}
			continue
		}
		slices := &discoveryv1.EndpointSliceList{}
		everywhere.saw(start, c1.Get(ctx, key, &mcsv1.ServiceImport{}) == nil && c2.Get(ctx, key, &mcsv1.ServiceImport{}) == nil &&
			c1.List(ctx, slices, client.InNamespace(lab.SampleNamespace), client.MatchingLabels{mcsv1.LabelServiceName: svc, mcsv1.LabelSourceCluster: "c2"}) == nil &&
			len(slices.Items) > 0)
	}
	tol := sloTolerance{early: 100 * time.Millisecond, late: 400 * time.Millisecond}
	set, export = oneObservation(t, labtest.HubCluster, sets, "", beforeSets), oneObservation(t, labtest.HubCluster, exports, "", beforeExports)
	tol.check(t, "the ClusterSet's new generation to every member", set, generation.found, everywhere.found)
	tol.check(t, "the new export to every member", export, generation.found, everywhere.found)
	sawGeneration := generation.found.lo
	// Each observation names its event.
	hasExemplar(t, labtest.HubCluster, sets, "generation", strconv.FormatInt(env.ClusterSet(t).Generation, 10), set, sawGeneration)
	hasExemplar(t, labtest.HubCluster, exports, "export", lab.SampleNamespace+"/"+svc, export, sawGeneration)
	return set, export
}

// sloPause is how long memberExportPropagation holds c1's API server: longer than the
// hub's own time and the windows' width, so that the lower side of the window means
// something; well under the hub's member probe timeout (3 s), after which it would call
// c1 unreachable, and the agents' Lease term, which no gateway can renew meanwhile (the
// active one holds on).
const sloPause = time.Second

// memberExportPropagation: a ServiceExport made in c2 (the ClusterSet honouring its
// members' exports), from its create to its ServiceImport and EndpointSlice in both
// members (polled every 10 ms), against strait_hub_export_propagation_seconds,
// and on to c1's pods resolving its clusterset.local name through CoreDNS (polled every
// 10 ms), against c1's strait_dns_propagation_seconds.
//
// Tolerance, the hub's part: its clock starts when the reconcile that saw the export
// starts, after its watch of c2 and its queue (early 150 ms), and stops as the push's does
// (late 400 ms). The member's part: strait dns observes once per snapshot it builds (each
// of c1's two pods, one snapshot per burst of the import, its slices and the derived
// Service), each from the first change it serves, so every observation but one whose
// change landed during a build is at least the source's debounce, and their mean is no
// more than the interval from the import's arrival to the answer (late 150 ms: the polls
// and the lookup's path through CoreDNS).
func memberExportPropagation(t *testing.T) (took float64) {
	env.RestoreClusterSetSpec(t)
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) { cs.Spec.ExportPolicy = straitv1.ExportPolicyMemberExports }); err != nil {
		t.Fatal(err)
	}
	const svc = "whereami-slo-mcs"
	exportNew(t, svc)
	const exports, dns = "strait_hub_export_propagation_seconds", "strait_dns_propagation_seconds"
	beforeExports, beforeDNS := settledHistogram(t, labtest.HubCluster, exports, ""), histogramNow(t, "c1", dns, "")
	c1, c2 := env.Client(t, "c1"), env.Client(t, "c2")
	ctx := context.Background()
	export := &mcsv1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: lab.SampleNamespace, Name: svc}}
	name := svc + "." + lab.SampleNamespace + ".svc.clusterset.local"
	client1 := env.SourcePods(t, "c1")[0].NS
	// The clients' first request of a kind looks the kind up (discovery): not in the
	// interval measured.
	key := client.ObjectKey{Namespace: lab.SampleNamespace, Name: svc}
	_ = c2.Get(ctx, key, &mcsv1.ServiceExport{})
	_ = c1.Get(ctx, key, &mcsv1.ServiceImport{})
	_ = c1.List(ctx, &discoveryv1.EndpointSliceList{}, client.InNamespace(lab.SampleNamespace))
	// c1's API server is paused across the create, for sloPause, as a member far away
	// answers slowly: the hub's writes into c1 wait for it, so the export reaches every
	// member no sooner than the resume, and an observation shorter than that (a clock
	// started late, a constant) falls under the window's lower side.
	resume := env.PauseAPIServer(t, "c1")
	start := time.Now()
	if err := c2.Create(ctx, export); err != nil {
		resume()
		t.Fatal(err)
	}
	created := window{start, time.Now()}
	t.Cleanup(func() { _ = c2.Delete(context.Background(), export) })
	time.Sleep(time.Until(start.Add(sloPause)))
	resume()
	resumed := time.Now()
	// arrived: the first of what the hub writes into c1 for the export (its import, its
	// slices; the derived Service is strait dns's own). The name is looked up in its
	// own loop from then on (lookingUp): a lookup takes up to its second, and in this
	// loop it delayed the sight of the objects by as much (a run measured 1.217 s where
	// the hub had 433 ms).
	var arrived, everywhere poller
	answers := make(chan window, 1)
	var answered window
	lookups, stopLookups := context.WithCancel(ctx)
	defer stopLookups()
	lookingUp := false
	for deadline := time.Now().Add(time.Minute); answered.hi.IsZero() || !everywhere.done(); time.Sleep(10 * time.Millisecond) {
		select {
		case answered = <-answers:
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("c2's ServiceExport of %s: not imported in both members and answered in c1 in a minute (arrived in c1 %v, everywhere %v, answered %v)",
				svc, arrived.done(), everywhere.done(), !answered.hi.IsZero())
		}
		poll := time.Now()
		inC1 := c1.Get(ctx, key, &mcsv1.ServiceImport{}) == nil
		sliced := func(c client.Client) bool {
			slices := &discoveryv1.EndpointSliceList{}
			return c.List(ctx, slices, client.InNamespace(lab.SampleNamespace), client.MatchingLabels{mcsv1.LabelServiceName: svc, mcsv1.LabelSourceCluster: "c2"}) == nil &&
				len(slices.Items) > 0
		}
		slicedInC1 := sliced(c1)
		arrived.saw(poll, inC1 || slicedInC1)
		// Every member's import and slices, c2's own of its export too: what the hub's
		// reconcile finds before it observes.
		if !everywhere.done() {
			everywhere.saw(poll, inC1 && slicedInC1 && c2.Get(ctx, key, &mcsv1.ServiceImport{}) == nil && sliced(c2))
		}
		if arrived.done() && !lookingUp {
			lookingUp = true
			go func() {
				var lastFailed time.Time
				for lookups.Err() == nil {
					asked := time.Now()
					lookup, cancel := context.WithTimeout(lookups, time.Second)
					ips, err := labtest.LookupInPod(lookup, client1, name)
					cancel()
					if err == nil && len(ips) > 0 {
						if lastFailed.IsZero() {
							lastFailed = asked
						}
						answers <- window{lastFailed, time.Now()}
						return
					}
					lastFailed = asked
					time.Sleep(10 * time.Millisecond)
				}
			}()
		}
	}
	// Nothing was written into c1 while its API server was stopped: a poll that blocked
	// on it and answered after the resume says nothing of before.
	for _, p := range []*poller{&arrived, &everywhere} {
		if p.found.lo.Before(resumed) {
			p.found.lo = resumed
		}
	}
	// The hub's clock starts at its watch's event of the export (after the create's
	// commit: its delivery, early 150 ms) and stops at the reconcile that finds every
	// member holding it (late 400 ms, as for a pushed export).
	tol := sloTolerance{early: 150 * time.Millisecond, late: 400 * time.Millisecond}
	took = oneObservation(t, labtest.HubCluster, exports, "", beforeExports)
	tol.check(t, "c2's ServiceExport to every member", took, created, everywhere.found)
	hasExemplar(t, labtest.HubCluster, exports, "export", lab.SampleNamespace+"/"+svc, took, start)
	// Every snapshot built since, by either strait dns pod of c1, is in the histogram.
	time.Sleep(2*lab.PrometheusInterval + 200*time.Millisecond)
	afterDNS := histogramNow(t, "c1", dns, "")
	n := afterDNS.count - beforeDNS.count
	if n < 1 {
		t.Fatalf("c1's strait dns observed no propagation for the import of %s", svc)
	}
	sum := time.Duration((afterDNS.sum - beforeDNS.sum) * float64(time.Second))
	mean := sum / time.Duration(n)
	measured := answered.hi.Sub(arrived.found.lo)
	t.Logf("c1's strait dns: %v observations, mean %s; the test measured %s from the import's arrival to the answer", n, mean.Round(time.Millisecond), measured.Round(time.Millisecond))
	// A change that lands while a snapshot is being built is in it, observed at less
	// than the debounce: one such in a burst is allowed for.
	if floor := time.Duration(n-1) * source.DefaultDebounce; sum < floor {
		t.Errorf("c1's strait dns observed %s over %v snapshots, want at least the debounce (%s) for all but one of them", sum.Round(time.Millisecond), n, source.DefaultDebounce)
	}
	if mean > measured+150*time.Millisecond {
		t.Errorf("c1's strait dns observed a mean of %s per snapshot, want no more than the import's arrival to the answer as the test measured it (%s) + 150ms",
			mean.Round(time.Millisecond), measured.Round(time.Millisecond))
	}
	return took
}

// crashFailover: c2's active gateway agent crashes (SIGKILL, its kubelet stopped: the
// Lease must run out). Its term ends LeaseDurationSeconds after its last renewal, whose
// renewTime the test reads from the Lease's watch (the agents and the test share this
// machine's one clock); from then to GETs c1 → a pod on the standby's node answered
// again (every 50 ms: after the send of the last one unanswered, by the first answer),
// against strait_agent_failover_seconds of the agent that took over, which times from
// the term's end as it counted it (from when its watch saw that renewal) to its first
// health check answered by c1 through its cable. GETs to a pod on c2's plain node must
// resume too; they wait for that node's route as well.
//
// Tolerance: the standby saw the last renewal a watch delivery after the holder wrote
// it, so its clock may start later (early 100 ms); its checks go every 50 ms and may
// be answered after a GET that crossed the same cable, and a standby that missed the
// last renewal's event counts the term from the one before, 250 ms earlier (late
// 300 ms).
func crashFailover(t *testing.T) (took float64) {
	const family = "strait_agent_failover_seconds"
	src, target := env.CrossTraffic(t, "c1", "c2")
	// The standby's own series: the stopped agent's go with it.
	active := env.ActiveGateway(t, "c2")
	c2, _ := env.Topo.Cluster("c2")
	var standby string
	for _, n := range c2.Nodes {
		if n.Gateway && n.Name != active.Name {
			standby = n.Name
		}
	}
	selector := fmt.Sprintf(`{node=%q}`, standby)
	before := settledHistogram(t, "c2", family, selector)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := env.HostClient(t, "c2").CoordinationV1().Leases(straitv1.SystemNamespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: kfields.OneTermEqualSelector("metadata.name", gateway.LeaseName).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// termEnd: the end of the last term the old holder renewed, as its renewals say.
	var mu sync.Mutex
	var termEnd time.Time
	go func() {
		for ev := range w.ResultChan() {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != active.Name || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
				continue
			}
			mu.Lock()
			termEnd = l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
			mu.Unlock()
		}
	}()
	// The agent's clock stops at its first health check answered through the new
	// cable; GETs to a pod on the node that takes over need just that cable (no other
	// node's route): their resumption is the event the histogram is held to.
	onStandby := net.JoinHostPort(env.PodOn(t, "c2", standby, labtest.WhereamiImage).Status.PodIP, "8080")
	require.Eventually(t, labtest.Converge, "c1 → "+onStandby, func() error {
		_, err := labtest.TryWhereami(src.NS, onStandby)
		return err
	})
	p, pg := labtest.StartProber(src.NS, target), labtest.StartProber(src.NS, onStandby)
	defer pg.Stop()
	h := env.StopActiveAgent(t, "c2", syscall.SIGKILL, src, target)
	mu.Lock()
	end := termEnd
	mu.Unlock()
	if end.IsZero() {
		t.Fatalf("no renewal of %s's seen on c2's Lease", h.From)
	}
	o := p.Since(end)
	if !o.Answered {
		t.Fatalf("c1 → c2 not answered after %s's term ended: %s", h.From, o)
	}
	if h.To != standby {
		t.Fatalf("c2's gateway moved to %s, not to the standby %s", h.To, standby)
	}
	pg.Stop()
	lo, hi, ok := pg.Resumed(end)
	if !ok {
		t.Fatalf("c1 → %s's pod %s not answered after %s's term ended", standby, onStandby, h.From)
	}
	tol := sloTolerance{early: 100 * time.Millisecond, late: 300 * time.Millisecond}
	took = oneObservation(t, "c2", family, selector, before)
	tol.check(t, fmt.Sprintf("c2's gateway %s crashed, %s took over (wireguard)", h.From, h.To), took, at(end), window{lo, hi})
	hasExemplar(t, "c2", family, "from", h.From, took, end)
	h.WaitBack(t)
	return took
}
