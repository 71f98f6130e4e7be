package controllers

import (
	"context"
	"fmt"
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
	const ns = straitv1.SystemNamespace
	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "set", Namespace: ns}}
	var secrets []client.Object
	for i, name := range []string{"s1", "s2", "s3"} {
		cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{Name: name,
			KubeConfig:   &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: name + "-kubeconfig"}},
			PodCIDRs:     []string{fmt.Sprintf("10.%d.0.0/17", i+1)},
			ServiceCIDRs: []string{fmt.Sprintf("10.%d.128.0/17", i+1)}})
		if name != "s3" {
			secrets = append(secrets, kubeConfigSecret(t, ns, name))
		}
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := &ClusterSetReconciler{secrets: fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(secrets...).Build(),
		recorder: &events.FakeRecorder{}, metrics: metrics, members: members.NewCache(members.Options{Scheme: scheme.New()}),
		cfg: Config{RetryInterval: time.Minute, MaxConcurrentMembers: 8}}
	r.UseStandIns(ctx, []string{"s1", "s2", "s3"}, nil)

	conns := r.connect(ctx, cs, nil)
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
	if again := r.connect(ctx, cs, nil); again["s1"].member != conns["s1"].member {
		t.Error("s1 got another stand-in on the next reconcile")
	}
}

func kubeConfigSecret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	sec, err := clusters.StandInKubeConfigSecret(ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}
