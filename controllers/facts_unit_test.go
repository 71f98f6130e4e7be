package controllers

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/connections"
	"github.com/straitnet/strait/internal/scheme"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/bigset"
)

// What a member's change does to its facts: only what readFacts reads counts, and a
// Peer's latency in the member's summary waits for peersRefresh.
func TestFactsChangeIsWhatTheFactsHold(t *testing.T) {
	rel := &relevance{services: map[types.NamespacedName]bool{{Namespace: "pay", Name: "api"}: true}}
	meta := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	slice := func(svc string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "pay", Name: svc + "-x",
			Labels: map[string]string{discoveryv1.LabelServiceName: svc}}}
	}
	// The membership, its generation and its summary of the member's Peers.
	membership := func(gen int64, state string, latency int64) *straitv1.Membership {
		m := &straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName, Generation: gen}}
		if state != "" {
			s := connections.Summarize([]straitv1.ConnectionStatus{{Cluster: "c2", State: state, LatencyMicros: latency}})
			m.Status.Connections = &s
		}
		return m
	}
	printed := membership(1, straitv1.PeerConnected, 10)
	printed.Status.Prints = []straitv1.MemberPrint{{ClusterSet: "ns.cs", Kind: "Service", Count: 1, Sum: "0000000000000001"}}
	cases := []struct {
		name     string
		old, obj client.Object
		want     factsChangeKind
	}{
		{"a change of health", nil, nil, factsHold},
		{"an exported service", nil, &corev1.Service{ObjectMeta: meta("pay", "api")}, factsHold},
		{"a service nobody exports", nil, &corev1.Service{ObjectMeta: meta("pay", "other")}, factsUnchanged},
		{"a slice of an exported service", nil, slice("api"), factsHold},
		{"a slice of another service", nil, slice("other"), factsUnchanged},
		{"an exported service's ServiceExport", nil, &mcsv1.ServiceExport{ObjectMeta: meta("pay", "api")}, factsHold},
		{"another ServiceExport under the Declared policy", nil, &mcsv1.ServiceExport{ObjectMeta: meta("pay", "other")}, factsUnchanged},
		{"a ServiceImport", nil, &mcsv1.ServiceImport{ObjectMeta: meta("pay", "api")}, factsUnchanged},
		{"a gateway", nil, &straitv1.Gateway{ObjectMeta: meta(straitv1.SystemNamespace, "node1")}, factsHold},
		{"a global ingress", nil, &straitv1.GlobalIngress{ObjectMeta: meta(straitv1.SystemNamespace, "x")}, factsHold},
		{"the membership", nil, membership(1, "", 0), factsHold},
		{"the membership's spec", membership(1, "", 0), membership(2, "", 0), factsHold},
		{"a first summary of the peers", membership(1, "", 0), membership(1, straitv1.PeerConnected, 10), factsHold},
		{"a peer's latency in the summary", membership(1, straitv1.PeerConnected, 10), membership(1, straitv1.PeerConnected, 20), peerStatusOnly},
		{"a peer's state in the summary", membership(1, straitv1.PeerConnected, 10), membership(1, straitv1.PeerError, 10), factsHold},
		{"the member's prints", membership(1, straitv1.PeerConnected, 10), printed, factsUnchanged},
	}
	for _, c := range cases {
		if got := factsChange(rel, c.old, c.obj); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	rel.memberExports = true
	if got := factsChange(rel, nil, &mcsv1.ServiceExport{ObjectMeta: meta("pay", "other")}); got != factsHold {
		t.Errorf("a ServiceExport someone made under the MemberExports policy: %d, want %d", got, factsHold)
	}
}

// A member's facts are kept while nothing they hold changed, and read again after a
// change, including one reported while they were being read.
func TestMemberFactsAreReadAgainAfterAChange(t *testing.T) {
	m := members.NewStandIn(members.Key{Cluster: "c1"}, nil, nil, nil)
	mf := &memberFacts{}
	now := time.Now()
	reads := 0
	reporting := &straitv1.Membership{Status: straitv1.MembershipStatus{Connections: &straitv1.MemberConnections{}}}
	read := func() (*plan.MemberFacts, error) { reads++; return &plan.MemberFacts{Membership: reporting}, nil }
	first, _ := mf.read(m, 1, now, read)
	if again, _ := mf.read(m, 1, now, read); again != first || reads != 1 {
		t.Fatalf("nothing changed, yet the facts were read again (%d reads)", reads)
	}
	if _, _ = mf.read(m, 2, now, read); reads != 2 {
		t.Fatal("the spec asks other facts of the member, yet they were not read again")
	}
	mf.changed.Store(true)
	if _, _ = mf.read(m, 2, now, read); reads != 3 {
		t.Fatal("a change was reported, yet the facts were not read again")
	}
	// A change reported while the facts are read may be missing from them.
	during := func() (*plan.MemberFacts, error) { mf.changed.Store(true); return read() }
	mf.changed.Store(true)
	_, _ = mf.read(m, 2, now, during)
	if _, _ = mf.read(m, 2, now, read); reads != 5 {
		t.Fatal("a change reported during the read was lost")
	}
	mf.peersStale.Store(true)
	if _, _ = mf.read(m, 2, now.Add(peersRefresh/2), read); reads != 5 {
		t.Fatal("a Peer's latency made the facts be read again before peersRefresh")
	}
	if _, _ = mf.read(m, 2, now.Add(peersRefresh), read); reads != 6 {
		t.Fatal("a Peer's latency was not read after peersRefresh")
	}
	other := members.NewStandIn(members.Key{Cluster: "c1"}, nil, nil, nil)
	if _, _ = mf.read(other, 2, now.Add(peersRefresh), read); reads != 7 {
		t.Fatal("a new connection to the member kept the old connection's facts")
	}
}

// A member that reports no summary of its Peers has them read from its API server, and
// since nobody watches them, read again at the first reconcile past peersRefresh.
func TestPeersWithoutASummaryAreReadAgainAfterTheRefresh(t *testing.T) {
	m := members.NewStandIn(members.Key{Cluster: "c1"}, nil, nil, nil)
	mf := &memberFacts{}
	now := time.Now()
	reads := 0
	read := func() (*plan.MemberFacts, error) { reads++; return &plan.MemberFacts{}, nil }
	_, _ = mf.read(m, 1, now, read)
	if _, _ = mf.read(m, 1, now.Add(peersRefresh/2), read); reads != 1 {
		t.Fatalf("read %d times before peersRefresh, want once", reads)
	}
	if _, _ = mf.read(m, 1, now.Add(peersRefresh), read); reads != 2 {
		t.Fatal("the Peers of a member without a summary were not read again after peersRefresh")
	}
}

// The connections come from the member's summary when it reports one, from its Peers,
// listed from its API server since the hub does not watch them, when it does not.
func TestPeersAreListedOnlyWithoutASummary(t *testing.T) {
	ctx := context.Background()
	peer := &straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: "c2"},
		Spec: straitv1.PeerSpec{ClusterID: "c2"}, Status: straitv1.PeerStatus{State: straitv1.PeerError}}
	membership := func(summary *straitv1.MemberConnections) *straitv1.Membership {
		return &straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName},
			Status: straitv1.MembershipStatus{Connections: summary}}
	}
	up := connections.Summarize([]straitv1.ConnectionStatus{{Cluster: "c2", State: straitv1.PeerConnected}})
	for _, tc := range []struct {
		name      string
		summary   *straitv1.MemberConnections
		listed    int
		wantState string
	}{
		{"no summary", nil, 1, straitv1.PeerError},
		{"a summary", &up, 0, straitv1.PeerConnected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			informers := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(membership(tc.summary)).Build()
			api := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(peer).WithStatusSubresource(peer).Build()
			f, err := readFacts(ctx, informers, api, nil, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Peers) != tc.listed {
				t.Errorf("%d Peers listed, want %d", len(f.Peers), tc.listed)
			}
			cs, obs := bigset.New(2, 1)
			obs[bigset.Name(0)] = f
			p, errs := plan.Compute(cs, obs)
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			st := p.Status.Clusters[0]
			if len(st.Connections) != 1 || st.Connections[0].State != tc.wantState {
				t.Errorf("%s's connections in the status %+v, want c2 %s", st.Name, st.Connections, tc.wantState)
			}
		})
	}
}
