package controllers

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/scheme"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/clusters"
)

// The hub reaches a stand-in (UseStandIns) as it reaches a member through a kubeconfig:
// it reads the Secret, probes the member and reads its kube-system UID, observes it and
// writes it, and none of it goes through the connection cache. A cluster whose Secret
// is gone is not connected, stand-in or not.
func TestStandInsAreConnectedAndWritten(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs, secrets := standInSet(t, "s1", "s2", "s3")
	secrets = secrets[:2] // s3 has no Secret
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := &ClusterSetReconciler{secrets: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(secrets...).Build(),
		recorder: &events.FakeRecorder{}, metrics: metrics, members: members.NewCache(members.Options{Scheme: scheme.New()}),
		cfg: Config{RetryInterval: time.Minute, MaxConcurrentMembers: 8}}
	r.UseStandIns(ctx, []string{"s1", "s2", "s3"}, nil)

	conns := r.connect(ctx, cs, nil, false)
	for _, name := range []string{"s1", "s2"} {
		c := conns[name]
		if !c.reachable() {
			t.Fatalf("%s: not reachable: %v", name, c.err)
		}
		if uid := c.member.KnownKubeSystemUID(); uid != types.UID("standin-"+name) {
			t.Errorf("%s: kube-system UID %q", name, uid)
		}
	}
	if c := conns["s3"]; c.reachable() || !c.noKubeConfig {
		t.Errorf("s3 without its Secret: reachable %v, noKubeConfig %v", c.reachable(), c.noKubeConfig)
	}
	if n := r.members.Len(); n != 0 {
		t.Errorf("%d connections in the cache, want none", n)
	}
	observed := r.observe(ctx, cs, conns)
	if f := observed["s1"]; f == nil || f.KubeSystemUID != "standin-s1" {
		t.Errorf("facts of s1: %+v", f)
	}
	spec, errs := plan.Check(cs)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	p, errs := r.computePlan(clusterSetName(cs), spec, observed)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	results := r.writeMembers(ctx, cs, p, conns)
	for _, name := range []string{"s1", "s2"} {
		if res := results[name]; res.err != nil || res.applied == 0 {
			t.Errorf("%s: %d applied, %v", name, res.applied, res.err)
		}
	}
	if again := r.connect(ctx, cs, nil, false); again["s1"].member != conns["s1"].member {
		t.Error("s1 got another stand-in on the next reconcile")
	}
}

// standInSet is a ClusterSet in strait-system of the clusters named, each with pods in
// 10.<i+1>.0.0/17 and services in 10.<i+1>.128.0/17, and their kubeconfig Secrets.
func standInSet(t *testing.T, names ...string) (*straitv1.ClusterSet, []client.Object) {
	t.Helper()
	const ns = straitv1.SystemNamespace
	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "set", Namespace: ns}}
	var secrets []client.Object
	for i, name := range names {
		cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{Name: name,
			KubeConfig:   &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: name + "-kubeconfig"}},
			PodCIDRs:     []string{fmt.Sprintf("10.%d.0.0/17", i+1)},
			ServiceCIDRs: []string{fmt.Sprintf("10.%d.128.0/17", i+1)}})
		secrets = append(secrets, kubeConfigSecret(t, ns, name))
	}
	return cs, secrets
}

func kubeConfigSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	sec, err := clusters.StandInKubeConfigSecret(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

// A member that answers keeps its connection for kubeConfigRecheck without its Secret
// read again; a reconcile someone asked for, a changed reference, an old read and a
// member that does not answer read it.
func TestKubeConfigSecretsAreReadAgainWhenDue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs, secrets := standInSet(t, "s1", "s2", "s3")
	secrets = append(secrets, kubeConfigSecret(t, cs.Namespace, "s1-other"))
	reads := &countingReader{Reader: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(secrets...).Build()}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := &ClusterSetReconciler{secrets: reads, recorder: &events.FakeRecorder{}, metrics: metrics,
		members: members.NewCache(members.Options{Scheme: scheme.New()}),
		cfg:     Config{RetryInterval: time.Minute, MaxConcurrentMembers: 8}}
	set := r.UseStandIns(ctx, []string{"s1", "s2", "s3"}, nil)

	read := func(what string, reread bool, want ...string) {
		t.Helper()
		reads.reset()
		for name, c := range r.connect(ctx, cs, nil, reread) {
			if down, _ := set.down.Load(name); c.reachable() == (down == true) {
				t.Errorf("%s: %s reachable %v: %v", what, name, c.reachable(), c.err)
			}
		}
		if got := reads.names(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: Secrets read %v, want %v", what, got, want)
		}
	}
	read("the first reconcile", false, "s1-kubeconfig", "s2-kubeconfig", "s3-kubeconfig")
	read("the next one", false)
	read("one someone asked for", true, "s1-kubeconfig", "s2-kubeconfig", "s3-kubeconfig")

	cs.Spec.Clusters[0].KubeConfig.SecretRef.Name = "s1-other-kubeconfig"
	read("after s1's reference changed", false, "s1-other-kubeconfig")

	k2 := members.Key{ClusterSet: clusterSetName(cs), Cluster: "s2"}
	v, _ := r.kubeConfigsRead.Load(k2)
	last := v.(kubeConfigRead)
	last.at = last.at.Add(-kubeConfigRecheck)
	r.kubeConfigsRead.Store(k2, last)
	read("after s2's read got old", false, "s2-kubeconfig")

	// A member that refuses the hub's writes, its credentials perhaps rotated.
	set.SetRefusing("s1", true)
	spec, errs := plan.Check(cs)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	conns := r.connect(ctx, cs, nil, false)
	p, errs := r.computePlan(clusterSetName(cs), spec, r.observe(ctx, cs, conns))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if res := r.writeMembers(ctx, cs, p, conns)["s1"]; res.err == nil || res.unreachable {
		t.Fatalf("s1 refusing writes: %v, unreachable %v", res.err, res.unreachable)
	}
	set.SetRefusing("s1", false)
	read("after s1 refused a write", false, "s1-other-kubeconfig")

	set.SetDown("s3", true)
	read("the reconcile that finds s3 gone", false)
	read("the next one", false, "s3-kubeconfig")
}

// countingReader counts the Secrets read through it.
type countingReader struct {
	client.Reader
	mu   sync.Mutex
	read []string
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.mu.Lock()
	c.read = append(c.read, key.Name)
	c.mu.Unlock()
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) reset() {
	c.mu.Lock()
	c.read = nil
	c.mu.Unlock()
}

func (c *countingReader) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]string(nil), c.read...)
	sort.Strings(out)
	return out
}
