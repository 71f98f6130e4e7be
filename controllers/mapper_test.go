package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/scheme"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/bigset"
	"github.com/straitnet/strait/test/clusters"
)

// Every kind the hub writes into a member (plan.Objects), watches, prunes or reads there
// (kube-system's Namespace) maps through the fixed mapper, with the scope its objects
// have: a kind it lacked would fail every request for it with "no matches for kind".
func TestTheMemberMapperMapsEveryKindTheHubUsesInAMember(t *testing.T) {
	cs, obs := bigset.New(3, 30)
	p, errs := plan.Compute(cs, obs)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	// false: cluster-scoped. The IPsec key's Secret is only planned with IPsec gateways.
	used := map[runtime.Object]bool{&corev1.Namespace{}: false, &corev1.Secret{}: true}
	for _, o := range p.Objects(bigset.Name(1)) {
		used[o] = o.GetNamespace() != ""
	}
	for _, w := range watchedKinds() {
		used[w.Object] = true
	}
	for _, pk := range prunable() {
		used[pk.list] = true
	}
	kinds, mapper, seen := scheme.New(), memberMapper(), map[string]bool{}
	for o, namespaced := range used {
		gvk, err := apiutil.GVKForObject(o, kinds)
		if err != nil {
			t.Fatal(err)
		}
		seen[strings.TrimSuffix(gvk.Kind, "List")] = true
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s: %v", gvk, err)
			continue
		}
		if got := m.Scope.Name() == meta.RESTScopeNameNamespace; got != namespaced {
			t.Errorf("%s: namespaced %v, its objects say %v", gvk, got, namespaced)
		}
	}
	for _, want := range []string{"Membership", "Peer", "GlobalIngress", "ServiceImport", "EndpointSlice", "Service"} {
		if !seen[want] {
			t.Errorf("the plan wrote no %s: the test no longer covers it", want)
		}
	}
}

// The fixed mapper names each member kind's resource and scope as an API server with
// Strait's and the MCS CRDs serves them (the plural of Gateway is not its guess,
// "gatewaies").
func TestTheMemberMapperAgreesWithAMembersDiscovery(t *testing.T) {
	m := clusters.NewCluster(t)
	hc, err := rest.HTTPClientFor(m.Config)
	if err != nil {
		t.Fatal(err)
	}
	served, err := apiutil.NewDynamicRESTMapper(m.Config, hc)
	if err != nil {
		t.Fatal(err)
	}
	fixed := memberMapper()
	for _, k := range memberKinds() {
		want, err := served.RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
		if err != nil {
			t.Errorf("%s: the member: %v", k.gvk, err)
			continue
		}
		got, err := fixed.RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
		if err != nil {
			t.Errorf("%s: %v", k.gvk, err)
			continue
		}
		if got.Resource != want.Resource || got.Scope.Name() != want.Scope.Name() || got.GroupVersionKind != want.GroupVersionKind {
			t.Errorf("%s: maps to %s, %s; the member serves %s, %s", k.gvk, got.Resource, got.Scope.Name(), want.Resource, want.Scope.Name())
		}
		// Of a list's kind only the scope is asked (discovery's mapper guesses its resource).
		list := k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List")
		wantScoped, err := served.RESTMapping(list.GroupKind(), list.Version)
		if err != nil {
			t.Errorf("%s: the member: %v", list, err)
			continue
		}
		if got, err := fixed.RESTMapping(list.GroupKind(), list.Version); err != nil || got.Scope.Name() != wantScoped.Scope.Name() {
			t.Errorf("%s: %v, want scope %s", list, err, wantScoped.Scope.Name())
		}
	}
}

// A member lacking a watched kind's CRD (Strait not installed there, or a release
// without it) is not connected, with the "no matches for kind" error the connection's
// REST mappers gave when they asked the member, and is connected once it serves it.
func TestAMemberLackingAWatchedKindIsNotConnectedUntilItServesIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := clusters.NewCluster(t)
	const crd = "strait.io_gateways.yaml"
	if err := m.UninstallCRD(crd); err != nil {
		t.Fatal(err)
	}
	cache := members.NewCache(members.Options{Scheme: m.Client.Scheme(), Watched: watchedKinds(),
		FieldManager: straitv1.FieldManager, Mapper: memberMapper()})
	t.Cleanup(cache.Stop)
	key := members.Key{ClusterSet: types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "set"}, Cluster: "c1"}
	conn, err := cache.Connect(key, "1", func() (*rest.Config, error) { return m.Config, nil })
	if err != nil {
		t.Fatal(err)
	}
	err = conn.Probe(ctx)
	if !meta.IsNoMatchError(err) || !strings.Contains(err.Error(), `no matches for kind "Gateway"`) {
		t.Fatalf("probing a member without the Gateway CRD: %v, want no matches for kind Gateway", err)
	}
	if h := conn.Health(); h.Connected {
		t.Fatal("a member without the Gateway CRD is connected")
	}
	if err := m.InstallCRD(crd); err != nil {
		t.Fatal(err)
	}
	g.Eventually(func() error { return conn.Probe(ctx) }, 2*time.Minute, time.Second).Should(Succeed())
}
