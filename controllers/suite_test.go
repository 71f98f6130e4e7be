package controllers_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/hubtest"
)

// The shared fixture: one hub and three members, and the hub controller running against
// them, started once for the package by the first test that needs it.
var (
	sharedOnce sync.Once
	shared     *fixture
	sharedErr  error
)

type fixture struct {
	env    *clusters.Env
	stop   func()
	hubNS  string
	prefix int
	// metrics is the hub's registry, read as a scrape would.
	metrics prometheus.Gatherer
}

func TestMain(m *testing.M) {
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapLevel())))
	code := m.Run()
	if shared != nil {
		shared.stop()
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping control planes:", err)
		}
	}
	os.Exit(code)
}

// hub returns the shared fixture, starting it on first use. Tests that use it run one
// at a time (members hold one Membership each) and remove their ClusterSet at the end.
func hub(t *testing.T) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("needs kube-apiservers (run without -short)")
	}
	sharedOnce.Do(func() {
		env, err := clusters.Start(context.Background(), clusters.Options{Members: []string{"c1", "c2", "c3"}})
		if err != nil {
			sharedErr = err
			return
		}
		reg := prometheus.NewRegistry()
		stop, err := hubtest.RunController(env, 1*time.Second, reg)
		if err != nil {
			sharedErr = err
			_ = env.Stop()
			return
		}
		shared = &fixture{env: env, stop: stop, hubNS: env.HubNamespace, metrics: reg}
	})
	if sharedErr != nil {
		t.Fatalf("starting the control planes: %v", sharedErr)
	}
	return shared
}

func zapLevel() zapcore.Level {
	if os.Getenv("STRAIT_TEST_VERBOSE") != "" {
		return zapcore.DebugLevel
	}
	return zapcore.ErrorLevel
}

func ptr[T any](v T) *T { return &v }

// newClusterSet is a ClusterSet over the given members, each with its own CIDRs.
func (f *fixture) newClusterSet(t *testing.T, names ...string) *straitv1.ClusterSet {
	t.Helper()
	f.prefix++
	cs := &straitv1.ClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("set%d", f.prefix), Namespace: f.hubNS},
	}
	for _, n := range names {
		m := f.env.Member(n)
		if m == nil {
			t.Fatalf("no member %s", n)
		}
		i := int(n[len(n)-1] - '0')
		cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{
			Name:         n,
			KubeConfig:   &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: m.KubeConfigSecret}},
			PodCIDRs:     []string{fmt.Sprintf("10.%d.0.0/16", i)},
			ServiceCIDRs: []string{fmt.Sprintf("10.%d.0.0/16", 100+i)},
		})
	}
	return cs
}

// create makes the ClusterSet and removes it when the test ends, waiting until the
// hub has cleaned every member.
func (f *fixture) create(t *testing.T, cs *straitv1.ClusterSet) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(f.env.Hub.Client.Create(context.Background(), cs)).To(Succeed())
	t.Cleanup(func() { f.remove(t, cs) })
}

func (f *fixture) remove(t *testing.T, cs *straitv1.ClusterSet) {
	ctx := context.Background()
	g := NewWithT(t)
	cur := &straitv1.ClusterSet{}
	if err := f.env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(cs), cur); apierrors.IsNotFound(err) {
		return
	}
	if cur.Spec.Suspend {
		cur.Spec.Suspend = false
		g.Expect(f.env.Hub.Client.Update(ctx, cur)).To(Succeed())
	}
	g.Expect(client.IgnoreNotFound(f.env.Hub.Client.Delete(ctx, cur))).To(Succeed())
	g.Eventually(func() bool {
		err := f.env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(cs), &straitv1.ClusterSet{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 100*time.Millisecond).Should(BeTrue(), "the ClusterSet was not released by the hub")
	for _, m := range f.env.Members {
		g.Expect(hubObjects(ctx, m.Client, client.MatchingLabels{straitv1.LabelClusterSet: cs.Namespace + "." + cs.Name})).
			To(BeEmpty(), "objects left behind in %s", m.Name)
	}
}

// get reads a ClusterSet.
func (f *fixture) get(g Gomega, cs *straitv1.ClusterSet) *straitv1.ClusterSet {
	cur := &straitv1.ClusterSet{}
	g.Expect(f.env.Hub.Client.Get(context.Background(), client.ObjectKeyFromObject(cs), cur)).To(Succeed())
	return cur
}

// update changes a ClusterSet's spec with retries on conflicts.
func (f *fixture) update(t *testing.T, cs *straitv1.ClusterSet, change func(*straitv1.ClusterSet)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		cur := &straitv1.ClusterSet{}
		if err := f.env.Hub.Client.Get(context.Background(), client.ObjectKeyFromObject(cs), cur); err != nil {
			return err
		}
		change(cur)
		return f.env.Hub.Client.Update(context.Background(), cur)
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

// ready says whether the ClusterSet is Ready for its current generation.
func ready(cs *straitv1.ClusterSet) bool {
	c := apimeta.FindStatusCondition(cs.Status.Conditions, meta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && cs.Status.ObservedGeneration == cs.Generation
}

// readyClusterSet creates a ClusterSet of the named clusters and waits until it is Ready.
func (f *fixture) readyClusterSet(t *testing.T, clusters ...string) *straitv1.ClusterSet {
	t.Helper()
	cs := f.newClusterSet(t, clusters...)
	f.create(t, cs)
	f.waitReady(t, cs)
	return cs
}

func (f *fixture) waitReady(t *testing.T, cs *straitv1.ClusterSet) *straitv1.ClusterSet {
	t.Helper()
	g := NewWithT(t)
	var cur *straitv1.ClusterSet
	g.Eventually(func(g Gomega) {
		cur = f.get(g, cs)
		g.Expect(ready(cur)).To(BeTrue(), "conditions: %+v", cur.Status.Conditions)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return cur
}

// hubObjects lists "Kind ns/name" of everything labelled as written by the hub (and
// matching more selectors, if given).
func hubObjects(ctx context.Context, c client.Client, more ...client.ListOption) ([]string, error) {
	opts := append([]client.ListOption{client.HasLabels{straitv1.LabelManagedBy, straitv1.LabelClusterSet}}, more...)
	var out []string
	for _, l := range []client.ObjectList{&straitv1.MembershipList{}, &straitv1.PeerList{}, &straitv1.GlobalIngressList{},
		&mcsv1.ServiceExportList{}, &mcsv1.ServiceImportList{}, &discoveryv1.EndpointSliceList{}, &corev1.SecretList{}, &corev1.ServiceList{}} {
		if err := c.List(ctx, l, opts...); err != nil {
			return nil, err
		}
		items, err := apimeta.ExtractList(l)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			o := it.(client.Object)
			out = append(out, fmt.Sprintf("%T %s/%s", o, o.GetNamespace(), o.GetName()))
		}
	}
	return out, nil
}

// events lists the reasons and notes of the hub's events about a ClusterSet.
func (f *fixture) events(g Gomega, cs *straitv1.ClusterSet) []string {
	var list eventsv1.EventList
	g.Expect(f.env.Hub.Client.List(context.Background(), &list, client.InNamespace(cs.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == cs.Name && e.Regarding.Kind == straitv1.ClusterSetKind {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}
