package controllers_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/hubtest"
	"github.com/straitnet/strait/test/require"
)

// BenchmarkExportToImportWithStandIns/members=255 is BenchmarkExportToImport into 255
// members: 255 API servers do not fit on one machine, so the same 10 members with real
// API servers are joined by 245 in-memory stand-ins (controllers.StandIns), and the hub
// plans, writes and records all 255 each change: its passes over every member,
// MaxConcurrentMembers at a time, a status of 255 clusters, 255 ClusterSetMembers, a
// kubeconfig Secret read and a probe per member per reconcile.
//
// Each change is timed from adding the export to the ClusterSet until the last of the
// 255 members holds its ServiceImport: a real member when its watch sees the import, a
// stand-in when the hub's write of the import's status (which follows the import's)
// has been answered, a request later in the member's pass than a real member's clock
// stops. Every request to a stand-in waits the stand-in latency (standin-ms): the
// median of 50 server-side applies of a new ServiceImport to the real members, through
// a client like the hub's, measured in the same run after the ClusterSet is ready and
// before the clock starts (a probe or a get, which a real member answers faster, waits
// as long). Stand-ins also encode and decode every request body and hand every write of
// a watched kind back to the hub as a member's informer does; what they spare the hub
// is said at controllers.StandIns. real-p99-ms is the p99 of the last of the 10 real
// members alone, in the same changes; reconciles/change and member-writes/change are
// the hub's reconciles that ended and its writes into members (an import's status
// counts as one), over the changes. Run with -benchtime=1x for exactly 20 changes.
func BenchmarkExportToImportWithStandIns(b *testing.B) {
	const withAPIServers, total = 10, 255
	b.Run(fmt.Sprintf("members=%d", total), func(b *testing.B) { benchStandIns(b, withAPIServers, total) })
}

func benchStandIns(b *testing.B, withAPIServers, total int) {
	const changes = 20
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	var names, standIns []string
	for i := range withAPIServers {
		names = append(names, fmt.Sprintf("m%02d", i))
	}
	for i := withAPIServers; i < total; i++ {
		standIns = append(standIns, fmt.Sprintf("s%03d", i))
	}
	env, err := clusters.Start(ctx, clusters.Options{Members: names})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	for _, name := range standIns {
		if err := standInSecret(ctx, env, name); err != nil {
			b.Fatal(err)
		}
	}

	seen := newImportWatch()
	for _, m := range env.Members {
		if err := seen.watch(ctx, b, m); err != nil {
			b.Fatal(err)
		}
	}
	var set *controllers.StandIns
	reg := prometheus.NewRegistry()
	stop, err := hubtest.RunControllerWith(env, 5*time.Second, reg, func(r *controllers.ClusterSetReconciler) {
		set = r.UseStandIns(ctx, standIns, func(cluster, name string, at time.Time) { seen.saw(name, cluster, at) })
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)

	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: env.HubNamespace}}
	for i, name := range append(append([]string(nil), names...), standIns...) {
		secret := name + "-kubeconfig"
		if i < withAPIServers {
			secret = env.Members[i].KubeConfigSecret
		}
		// Pods in 10.<i+1>.0.0/17, services in 10.<i+1>.128.0/17: none overlap.
		cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{
			Name:         name,
			KubeConfig:   &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: secret}},
			PodCIDRs:     []string{fmt.Sprintf("10.%d.0.0/17", i+1)},
			ServiceCIDRs: []string{fmt.Sprintf("10.%d.128.0/17", i+1)},
		})
	}
	if err := env.Hub.Client.Create(ctx, cs); err != nil {
		b.Fatal(err)
	}
	require.Eventually(b, 3*time.Minute, "ClusterSet ready", func() error {
		cur := &straitv1.ClusterSet{}
		if err := env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(cs), cur); err != nil {
			return err
		}
		if !apimeta.IsStatusConditionTrue(cur.Status.Conditions, meta.ReadyCondition) {
			return fmt.Errorf("conditions %+v", cur.Status.Conditions)
		}
		if n := len(cur.Status.Clusters); n != total {
			return fmt.Errorf("%d clusters in status, want %d", n, total)
		}
		return nil
	})

	latency, err := applyLatency(ctx, env.Members, 50)
	if err != nil {
		b.Fatal(err)
	}
	set.SetLatency(latency)

	var samples, realSamples []time.Duration
	before := hubCounts(b, reg)
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		b.StopTimer()
		makeServices(ctx, b, env.Members, it, changes)
		b.StartTimer()
		for k := range changes {
			m := env.Members[k%withAPIServers]
			name := fmt.Sprintf("svc-%d-%d", it, k)
			start := time.Now()
			if err := addExport(ctx, env.Hub.Client, cs, straitv1.ExportSpec{Namespace: "bench", Name: name, Clusters: []string{m.Name}}); err != nil {
				b.Fatal(err)
			}
			last := seen.waitAll(b, name, total, 2*time.Minute)
			samples = append(samples, last.Sub(start))
			realSamples = append(realSamples, seen.lastOf(name, names).Sub(start))
		}
	}
	b.StopTimer()
	after := hubCounts(b, reg)
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	sort.Slice(realSamples, func(i, j int) bool { return realSamples[i] < realSamples[j] })
	b.ReportMetric(ms(percentile(samples, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(samples, 99)), "p99-ms")
	b.ReportMetric(ms(samples[0]), "min-ms")
	b.ReportMetric(ms(samples[len(samples)-1]), "max-ms")
	b.ReportMetric(ms(percentile(realSamples, 99)), "real-p99-ms")
	b.ReportMetric(ms(latency), "standin-ms")
	n := float64(b.N * changes)
	const reconciles, applied = "strait_hub_reconcile_duration_seconds_count", "strait_hub_objects_applied_total"
	b.ReportMetric((after[reconciles]-before[reconciles])/n, "reconciles/change")
	b.ReportMetric((after[applied]-before[applied])/n, "member-writes/change")
	// Where a change's reconciles spent their time (strait_hub_reconcile_phase_seconds).
	for _, phase := range []string{"prepare", "connect", "observe", "plan", "write", "status", "records", "status-patch"} {
		k := "strait_hub_reconcile_phase_seconds{" + phase + "}_sum"
		b.ReportMetric((after[k]-before[k])*1000/n, phase+"-ms/change")
	}
	b.ReportMetric(0, "ns/op") // the per-op time of a whole iteration says nothing here
}

// lastOf is when the last of members first held the import name (zero if one has not).
func (w *importWatch) lastOf(name string, members []string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for _, m := range members {
		t, ok := w.at[name][m]
		if !ok {
			return time.Time{}
		}
		if t.After(last) {
			last = t
		}
	}
	return last
}

// standInSecret registers a stand-in's kubeconfig in the hub, as test/clusters registers
// a real member's: the hub reads it every reconcile. It names a server nobody answers
// at; the stand-in answers instead.
func standInSecret(ctx context.Context, env *clusters.Env, name string) error {
	sec, err := clusters.StandInKubeConfigSecret(env.HubNamespace, name)
	if err != nil {
		return err
	}
	if err := env.Hub.Client.Create(ctx, sec); err != nil {
		return fmt.Errorf("kubeconfig Secret of stand-in %s: %w", name, err)
	}
	return nil
}

// applyLatency is the median of n server-side applies of a new ServiceImport (no
// labels: the hub takes it for no one's) to the real members in turn, each through a
// client set up as the hub's member connections are (members.Cache).
func applyLatency(ctx context.Context, ms []*clusters.Cluster, n int) (time.Duration, error) {
	const ns = "standin-latency"
	var clients []client.Client
	for _, m := range ms {
		cfg := rest.CopyConfig(m.Config)
		cfg.Timeout, cfg.QPS, cfg.Burst = 10*time.Second, 50, 100
		c, err := client.New(cfg, client.Options{Scheme: m.Client.Scheme()})
		if err != nil {
			return 0, fmt.Errorf("client for %s: %w", m.Name, err)
		}
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			return 0, fmt.Errorf("namespace %s in %s: %w", ns, m.Name, err)
		}
		clients = append(clients, c)
	}
	took := make([]time.Duration, 0, n)
	for i := range n {
		si := &mcsv1.ServiceImport{
			TypeMeta:   metav1.TypeMeta{APIVersion: mcsv1.GroupVersion.String(), Kind: "ServiceImport"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("latency-%d", i), Namespace: ns},
			Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP,
				Ports: []mcsv1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
		}
		body, _, err := controllers.ApplyBody(si)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		if err := clients[i%len(clients)].Apply(ctx, client.ApplyConfigurationFromUnstructured(body),
			client.FieldOwner(straitv1.FieldManager), client.ForceOwnership); err != nil {
			return 0, fmt.Errorf("applying ServiceImport %s/%s: %w", ns, si.Name, err)
		}
		took = append(took, time.Since(start))
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	return took[len(took)/2], nil
}

// hubCounts are the hub's counters and its histograms' counts and sums from reg, summed
// over their labels.
func hubCounts(b *testing.B, reg *prometheus.Registry) map[string]float64 {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" {
					name += "{" + l.GetValue() + "}"
				}
			}
			switch {
			case m.GetHistogram() != nil:
				out[name+"_count"] += float64(m.GetHistogram().GetSampleCount())
				out[name+"_sum"] += m.GetHistogram().GetSampleSum()
			case m.GetCounter() != nil:
				out[name] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}
