package controllers_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/hubtest"
	"github.com/straitnet/strait/test/require"
)

// BenchmarkExportToImport measures, on 10 members with real API servers, the time from
// adding an export to the ClusterSet until every member holds its ServiceImport (seen
// through a watch on each member). Each iteration makes 20 such changes, one at a time;
// p50 and p99 are over all changes. Run with -benchtime=1x for exactly 20.
func BenchmarkExportToImport(b *testing.B) {
	const members, changes = 10, 20
	ctx := context.Background()
	var names []string
	for i := range members {
		names = append(names, fmt.Sprintf("m%02d", i))
	}
	env, err := clusters.Start(ctx, clusters.Options{Members: names})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	stop, err := hubtest.RunController(env, 5*time.Second, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)

	// Watch every member's ServiceImports; record when each first appears.
	seen := newImportWatch()
	for _, m := range env.Members {
		if err := seen.watch(ctx, b, m); err != nil {
			b.Fatal(err)
		}
	}

	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: env.HubNamespace}}
	for i, m := range env.Members {
		cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{
			Name:         m.Name,
			KubeConfig:   &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: m.KubeConfigSecret}},
			PodCIDRs:     []string{fmt.Sprintf("10.%d.0.0/16", i+1)},
			ServiceCIDRs: []string{fmt.Sprintf("10.%d.0.0/16", 101+i)},
		})
	}
	if err := env.Hub.Client.Create(ctx, cs); err != nil {
		b.Fatal(err)
	}
	require.Eventually(b, 60*time.Second, "ClusterSet ready", func() error {
		cur := &straitv1.ClusterSet{}
		if err := env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(cs), cur); err != nil {
			return err
		}
		if !apimeta.IsStatusConditionTrue(cur.Status.Conditions, meta.ReadyCondition) {
			return fmt.Errorf("conditions %+v", cur.Status.Conditions)
		}
		return nil
	})

	var samples []time.Duration
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		b.StopTimer()
		makeServices(ctx, b, env.Members, it, changes)
		b.StartTimer()
		for k := range changes {
			m := env.Members[k%members]
			name := fmt.Sprintf("svc-%d-%d", it, k)
			start := time.Now()
			if err := addExport(ctx, env.Hub.Client, cs, straitv1.ExportSpec{Namespace: "bench", Name: name, Clusters: []string{m.Name}}); err != nil {
				b.Fatal(err)
			}
			last := seen.waitAll(b, name, members, 60*time.Second)
			samples = append(samples, last.Sub(start))
		}
	}
	b.StopTimer()
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	b.ReportMetric(ms(percentile(samples, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(samples, 99)), "p99-ms")
	b.ReportMetric(ms(samples[0]), "min-ms")
	b.ReportMetric(ms(samples[len(samples)-1]), "max-ms")
	b.ReportMetric(0, "ns/op") // the per-op time of a whole iteration says nothing here
}

// makeServices makes iteration it's services to export, before the clock starts: change
// k's service "svc-<it>-<k>" in member k modulo their number.
func makeServices(ctx context.Context, b *testing.B, ms []*clusters.Cluster, it, changes int) {
	b.Helper()
	for k := range changes {
		name := fmt.Sprintf("svc-%d-%d", it, k)
		if err := makeService(ctx, ms[k%len(ms)].Client, "bench", name, fmt.Sprintf("10.0.0.%d", 10+it*changes+k)); err != nil {
			b.Fatal(err)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile of sorted samples, nearest rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	idx := (p*len(sorted) + 99) / 100
	if idx < 1 {
		idx = 1
	}
	return sorted[idx-1]
}

func addExport(ctx context.Context, c client.Client, cs *straitv1.ClusterSet, e straitv1.ExportSpec) error {
	for {
		cur := &straitv1.ClusterSet{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cs), cur); err != nil {
			return err
		}
		cur.Spec.Exports = append(cur.Spec.Exports, e)
		err := c.Update(ctx, cur)
		if err == nil || !isConflict(err) {
			return err
		}
	}
}

func isConflict(err error) bool { return apierrors.IsConflict(err) }

func makeService(ctx context.Context, c client.Client, ns, name, ip string) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	if err := c.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}); err != nil {
		return err
	}
	return c.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name + "-x", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.200.0.1"}}},
	})
}

// importWatch records when each member first saw each ServiceImport.
type importWatch struct {
	mu   sync.Mutex
	at   map[string]map[string]time.Time // import name -> member -> time
	wake chan struct{}
}

func newImportWatch() *importWatch {
	return &importWatch{at: map[string]map[string]time.Time{}, wake: make(chan struct{}, 1)}
}

func (w *importWatch) watch(ctx context.Context, b *testing.B, m *clusters.Cluster) error {
	c, err := cache.New(m.Config, cache.Options{Scheme: m.Client.Scheme()})
	if err != nil {
		return err
	}
	inf, err := c.GetInformer(ctx, &mcsv1.ServiceImport{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		w.saw(obj.(*mcsv1.ServiceImport).Name, m.Name, time.Now())
	}}); err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	b.Cleanup(cancel)
	go func() { _ = c.Start(cctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("watch on %s did not sync", m.Name)
	}
	return nil
}

// saw records that member holds the import name since at, unless it did already.
func (w *importWatch) saw(name, member string, at time.Time) {
	w.mu.Lock()
	if w.at[name] == nil {
		w.at[name] = map[string]time.Time{}
	}
	if _, ok := w.at[name][member]; !ok {
		w.at[name][member] = at
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// waitAll returns when n members hold the import, the time the last one saw it.
func (w *importWatch) waitAll(b *testing.B, name string, n int, timeout time.Duration) time.Time {
	b.Helper()
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		if len(w.at[name]) == n {
			var last time.Time
			for _, t := range w.at[name] {
				if t.After(last) {
					last = t
				}
			}
			w.mu.Unlock()
			return last
		}
		w.mu.Unlock()
		select {
		case <-w.wake:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			b.Fatalf("import %s reached %d of %d members", name, len(w.at[name]), n)
		}
	}
}
