package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
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

// sloTolerance: how far a histogram's one observation may be from the test's own
// measurement of the same event, each side measured to within its polling.
type sloTolerance struct{ early, late time.Duration }

func (tol sloTolerance) check(t *testing.T, what string, metric float64, measured time.Duration) {
	t.Helper()
	got := time.Duration(metric * float64(time.Second))
	t.Logf("%s: the histogram's observation %s, measured by the test %s", what, got.Round(time.Millisecond), measured.Round(time.Millisecond))
	if got < measured-tol.early || got > measured+tol.late {
		t.Errorf("%s: the histogram observed %s, the test measured %s: want within [-%s, +%s] of it",
			what, got.Round(time.Millisecond), measured.Round(time.Millisecond), tol.early, tol.late)
	}
}

// TestSLOMetricsAgreeWithTheTests: one event of each kind the hub's and the agents' SLO
// histograms time, measured by the test from outside as well, against the histogram's
// one observation read through the lab's Prometheus.
func TestSLOMetricsAgreeWithTheTests(t *testing.T) {
	env.Require(t)
	t.Run("a pushed export reaches every member", pushPropagation)
	t.Run("a member's ServiceExport reaches every member and its DNS", memberExportPropagation)
	t.Run("a gateway crash", crashFailover)
	// After both events: every panel has something to draw, and strait show slo has
	// both to show.
	t.Run("every dashboard panel has data", dashboardHasData)
	t.Run("strait show slo", showSLO)
}

// showSLO: `strait show slo` against the hub's Prometheus on the host (the lab daemon's
// forwarder, as lab up prints it) lists the events just caused, with their counts and
// percentiles.
func showSLO(t *testing.T) {
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
			if s.SLO == want.slo && s.For == want.of {
				found = s.Count >= 1 && s.P99 > 0
				t.Logf("%s for %s: %v observations, p99 %.3fs", s.SLO, s.For, s.Count, s.P99)
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
func pushPropagation(t *testing.T) {
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
	var sawGeneration, everywhere time.Time
	key := client.ObjectKey{Namespace: lab.SampleNamespace, Name: svc}
	for deadline := time.Now().Add(time.Minute); everywhere.IsZero(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the export of %s did not reach both members in a minute (generation seen %v)", svc, !sawGeneration.IsZero())
		}
		if sawGeneration.IsZero() {
			list := &straitv1.ClusterSetList{}
			if err := hub.List(ctx, list); err == nil && len(list.Items) == 1 && list.Items[0].Generation > gen {
				sawGeneration = time.Now()
			}
			continue
		}
		slices := &discoveryv1.EndpointSliceList{}
		if c1.Get(ctx, key, &mcsv1.ServiceImport{}) == nil && c2.Get(ctx, key, &mcsv1.ServiceImport{}) == nil &&
			c1.List(ctx, slices, client.InNamespace(lab.SampleNamespace), client.MatchingLabels{mcsv1.LabelServiceName: svc, mcsv1.LabelSourceCluster: "c2"}) == nil &&
			len(slices.Items) > 0 {
			everywhere = time.Now()
		}
	}
	measured := everywhere.Sub(sawGeneration)
	tol := sloTolerance{early: 100 * time.Millisecond, late: 400 * time.Millisecond}
	set, export := oneObservation(t, labtest.HubCluster, sets, "", beforeSets), oneObservation(t, labtest.HubCluster, exports, "", beforeExports)
	tol.check(t, "the ClusterSet's new generation to every member", set, measured)
	tol.check(t, "the new export to every member", export, measured)
	// Each observation names its event.
	hasExemplar(t, labtest.HubCluster, sets, "generation", strconv.FormatInt(env.ClusterSet(t).Generation, 10), set, sawGeneration)
	hasExemplar(t, labtest.HubCluster, exports, "export", lab.SampleNamespace+"/"+svc, export, sawGeneration)
}

// memberExportPropagation: a ServiceExport made in c2 (the ClusterSet honouring its
// members' exports), from its create to its ServiceImport in both members and its
// EndpointSlice in c1 (polled every 10 ms), against strait_hub_export_propagation_seconds,
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
func memberExportPropagation(t *testing.T) {
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
	start := time.Now()
	if err := c2.Create(ctx, export); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c2.Delete(context.Background(), export) })
	// arrived: the first of what the hub writes into c1 for the export (its import, its
	// slices; the derived Service is strait dns's own).
	var arrived, everywhere, answered time.Time
	for deadline := time.Now().Add(time.Minute); answered.IsZero() || everywhere.IsZero(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("c2's ServiceExport of %s: not imported in both members and answered in c1 in a minute (arrived in c1 %v, everywhere %v, answered %v)",
				svc, !arrived.IsZero(), !everywhere.IsZero(), !answered.IsZero())
		}
		inC1 := c1.Get(ctx, key, &mcsv1.ServiceImport{}) == nil
		slices := &discoveryv1.EndpointSliceList{}
		sliced := c1.List(ctx, slices, client.InNamespace(lab.SampleNamespace), client.MatchingLabels{mcsv1.LabelServiceName: svc, mcsv1.LabelSourceCluster: "c2"}) == nil &&
			len(slices.Items) > 0
		if arrived.IsZero() && (inC1 || sliced) {
			arrived = time.Now()
		}
		if everywhere.IsZero() && inC1 && sliced && c2.Get(ctx, key, &mcsv1.ServiceImport{}) == nil {
			everywhere = time.Now()
		}
		if !arrived.IsZero() && answered.IsZero() {
			lookup, cancel := context.WithTimeout(ctx, time.Second)
			if ips, err := labtest.LookupInPod(lookup, client1, name); err == nil && len(ips) > 0 {
				answered = time.Now()
			}
			cancel()
		}
	}
	tol := sloTolerance{early: 150 * time.Millisecond, late: 400 * time.Millisecond}
	took := oneObservation(t, labtest.HubCluster, exports, "", beforeExports)
	tol.check(t, "c2's ServiceExport to every member", took, everywhere.Sub(start))
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
	measured := answered.Sub(arrived)
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
}

// crashFailover: c2's active gateway agent crashes (SIGKILL, its kubelet stopped: the
// Lease must run out). Its term ends LeaseDurationSeconds after its last renewal, whose
// renewTime the test reads from the Lease's watch (the agents and the test share this
// machine's one clock); from then to the first GET c1 → c2 sent after it and answered
// (every 50 ms), against strait_agent_failover_seconds of the agent that took over, which
// times from the term's end as it counted it (from when its watch saw that renewal) to
// its first health check answered by c1 through its cable.
//
// Tolerance: the agent's checks go gateway to gateway every 50 ms, while the GETs (every
// 50 ms) go to a pod on c2's plain node, whose route back to c1 moves to the new gateway
// only when that node's agent has converged, after the cable was up (early 500 ms:
// 296 ms seen); the standby saw the last renewal a watch delivery after the holder wrote
// it, so its clock starts a few ms later, and one check's beat (late 150 ms).
func crashFailover(t *testing.T) {
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
	p := labtest.StartProber(src.NS, target)
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
	tol := sloTolerance{early: 500 * time.Millisecond, late: 150 * time.Millisecond}
	took := oneObservation(t, "c2", family, selector, before)
	tol.check(t, fmt.Sprintf("c2's gateway %s crashed, %s took over (wireguard)", h.From, h.To), took, o.Resumed)
	hasExemplar(t, "c2", family, "from", h.From, took, end)
	h.WaitBack(t)
}
