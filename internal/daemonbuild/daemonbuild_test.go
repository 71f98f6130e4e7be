package daemonbuild

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/clusters"
)

// Every daemon keeps its own entry: two agents and a DNS server publish, the hub applies
// the Membership's spec again as it does at every pass, one agent withdraws, and the
// others' entries stay as they were written.
func TestEachDaemonKeepsItsOwnEntry(t *testing.T) {
	c := clusters.NewCluster(t)
	ctx := context.Background()
	ns := straitv1.SystemNamespace
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	applyMembership := func() {
		t.Helper()
		m := &straitv1.Membership{
			TypeMeta:   metav1.TypeMeta{APIVersion: straitv1.GroupVersion.String(), Kind: "Membership"},
			ObjectMeta: metav1.ObjectMeta{Name: straitv1.MembershipName, Namespace: ns},
			Spec: straitv1.MembershipSpec{ClusterSet: "strait-system/basic", ClusterID: "c1", PodCIDRs: []string{"10.1.0.0/16"},
				ServiceCIDRs: []string{"10.2.0.0/16"}, Cable: straitv1.MemberCable{Driver: straitv1.CableWireGuard, Port: 4500}},
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(m)
		if err != nil {
			t.Fatal(err)
		}
		delete(u, "status")
		delete(u["metadata"].(map[string]any), "creationTimestamp")
		if err := c.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}),
			client.FieldOwner(straitv1.FieldManager), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	a1 := Self(straitv1.DaemonAgent, "c1-gw1", "", now)
	a2 := Self(straitv1.DaemonAgent, "c1-w1", "", now)
	dns := Self(straitv1.DaemonDNS, "c1-w1", "strait-dns-5d8f9-abcde", now)

	if err := Publish(ctx, c.Client, ns, a1); err == nil {
		t.Fatal("publishing without a Membership: no error, want NotFound")
	}
	applyMembership()
	for _, e := range []straitv1.DaemonStatus{a1, a2, dns, a1} {
		if err := Publish(ctx, c.Client, ns, e); err != nil {
			t.Fatal(err)
		}
	}
	applyMembership()
	m := &straitv1.Membership{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: straitv1.MembershipName}, m); err != nil {
		t.Fatal(err)
	}
	for _, e := range []straitv1.DaemonStatus{a1, a2, dns} {
		if !Published(m, e) {
			t.Errorf("entry %s not as published in %+v", e.Name, m.Status.Daemons)
		}
	}
	if len(m.Status.Daemons) != 3 {
		t.Errorf("%d entries, want 3: %+v", len(m.Status.Daemons), m.Status.Daemons)
	}
	if err := Withdraw(ctx, c.Client, ns, a2); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: straitv1.MembershipName}, m); err != nil {
		t.Fatal(err)
	}
	if Published(m, a2) || !Published(m, a1) || !Published(m, dns) || len(m.Status.Daemons) != 2 {
		t.Errorf("after %s withdrew: %+v, want %s and %s alone", a2.Name, m.Status.Daemons, a1.Name, dns.Name)
	}

	// Node c1-w1 is gone with its agent and its DNS server, neither of which withdrew.
	// A copy the list moved under since refuses the patch whole; a fresh one prunes
	// both and leaves c1-gw1's agent.
	a3 := Self(straitv1.DaemonAgent, "c1-w2", "", now)
	for _, e := range []straitv1.DaemonStatus{a2, a3} {
		if err := Publish(ctx, c.Client, ns, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: straitv1.MembershipName}, m); err != nil {
		t.Fatal(err)
	}
	nodes := []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "c1-gw1"}}, {ObjectMeta: metav1.ObjectMeta{Name: "c1-w2"}}}
	if g := Gone(m, nodes[1:], "c1-gw1"); g != nil {
		t.Errorf("Gone with a node list that lacks self: %+v, want nothing", g)
	}
	gone := Gone(m, nodes, "c1-gw1")
	if len(gone) != 2 || gone[0].Node != "c1-w1" || gone[1].Node != "c1-w1" {
		t.Fatalf("Gone: %+v, want c1-w1's agent and DNS server", gone)
	}
	// [a1 dns a2 a3]: the copy's patch tests dns at 1 and a2 at 2. a1 withdrawing moves
	// them to 0 and 1, and the API server must refuse that patch whole.
	stale := m.DeepCopy()
	if err := Withdraw(ctx, c.Client, ns, a1); err != nil {
		t.Fatal(err)
	}
	if err := Prune(ctx, c.Client, stale, gone); err == nil {
		t.Error("a prune from a copy whose entries moved since went through, want it refused")
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: straitv1.MembershipName}, m); err != nil {
		t.Fatal(err)
	}
	if !Published(m, dns) || !Published(m, a2) || !Published(m, a3) || len(m.Status.Daemons) != 3 {
		t.Errorf("after the refused prune: %+v, want %s, %s and %s as they were", m.Status.Daemons, dns.Name, a2.Name, a3.Name)
	}
	if err := Publish(ctx, c.Client, ns, a1); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: straitv1.MembershipName}, m); err != nil {
		t.Fatal(err)
	}
	if err := Prune(ctx, c.Client, m, Gone(m, nodes, "c1-gw1")); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: straitv1.MembershipName}, m); err != nil {
		t.Fatal(err)
	}
	if !Published(m, a1) || !Published(m, a3) || len(m.Status.Daemons) != 2 {
		t.Errorf("after the prune: %+v, want %s and %s alone", m.Status.Daemons, a1.Name, a3.Name)
	}
}

func TestSelfNamesTheEntryByNodeForAgentsAndByPodOtherwise(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 123456789, time.UTC)
	a := Self(straitv1.DaemonAgent, "n1", "", now)
	d := Self(straitv1.DaemonDNS, "n1", "strait-dns-x", now)
	if a.Name != "agent/n1" || d.Name != "dns/strait-dns-x" {
		t.Errorf("names %q, %q; want agent/n1, dns/strait-dns-x", a.Name, d.Name)
	}
	if a.Build.Version == "" || a.Build.Revision == "" || a.Since.Nanosecond() != 0 {
		t.Errorf("entry %+v: want a version, a revision and whole seconds", a)
	}
	long := Self(straitv1.DaemonAgent, string(make([]byte, 200)), "", now)
	if fm := FieldManager(long); len(fm) > 128 {
		t.Errorf("field manager of %d characters, the API server takes 128", len(fm))
	}
}

// A strait dns pod deleted without withdrawing its entry (its node still there) is gone
// once its Service's endpoints no longer name it and its entry is older than the grace;
// a new pod not listed yet, an agent and a list that lacks the caller are not.
func TestGonePodsAreTheEntriesNoEndpointNames(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	old, fresh := now.Add(-10*time.Minute), now.Add(-10*time.Second)
	m := &straitv1.Membership{Status: straitv1.MembershipStatus{Daemons: []straitv1.DaemonStatus{
		Self(straitv1.DaemonDNS, "gw-1", "dns-a", old),
		Self(straitv1.DaemonDNS, "gw-1", "dns-killed", old),
		Self(straitv1.DaemonDNS, "gw-2", "dns-new", fresh),
		Self(straitv1.DaemonAgent, "gw-1", "", old),
	}}}
	gone := GonePods(m, straitv1.DaemonDNS, []string{"dns-a", "dns-b"}, "dns-a", now, time.Minute)
	if len(gone) != 1 || gone[0].Pod != "dns-killed" {
		t.Errorf("GonePods: %+v, want dns-killed's entry alone", gone)
	}
	if g := GonePods(m, straitv1.DaemonDNS, []string{"dns-b"}, "dns-a", now, time.Minute); g != nil {
		t.Errorf("GonePods with endpoints that lack the caller: %+v, want nothing", g)
	}
	if g := GonePods(m, straitv1.DaemonDNS, []string{"dns-a"}, "dns-a", now.Add(-9*time.Minute-30*time.Second), time.Minute); g != nil {
		t.Errorf("GonePods within the grace of every entry: %+v, want nothing", g)
	}
}
