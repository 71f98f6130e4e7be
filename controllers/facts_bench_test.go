package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/test/clusters"
)

// BenchmarkReadMemberFacts is one read of a member's facts, as the hub made it for
// every member at every reconcile until it kept them (memberFacts), through the
// hub's own member connection (members.Cache), on a real API server holding what a
// member of a 1,000-member ClusterSet holds: a Peer per other member with its
// status, and the exported services' slices among imports' slices in one namespace
// (factsImports of them; a member holds 10,000 at 10,000 exports). A reconcile at
// 1,000 members read 1,000 of these; it now reads those that changed. peers-listed is
// a member without strait dns's summary of its Peers, which are then listed from its
// API server; summary, one with it (the Peers are not read).
func BenchmarkReadMemberFacts(b *testing.B) {
	const peers, exported, factsImports = 999, 10, 2000
	ctx := context.Background()
	m := clusters.NewCluster(b)
	c := m.Client
	for _, ns := range []string{straitv1.SystemNamespace, "shop"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range peers {
		g.Go(func() error {
			p := &straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: fmt.Sprintf("c%04d", i)},
				Spec: straitv1.PeerSpec{ClusterID: fmt.Sprintf("c%04d", i), CIDRs: []string{fmt.Sprintf("10.%d.%d.0/24", 100+i/250, i%250)},
					Endpoint: &straitv1.PeerEndpoint{Gateway: "node1", IP: fmt.Sprintf("192.0.2.%d", i%250+1), Port: 51820,
						Driver: straitv1.CableWireGuard, PublicKey: "dGhpcyBpcyBhIHB1YmxpYyBrZXkgb2YgMzIgYnl0ZXM=", HealthCheckIP: "10.99.0.1"}}}
			if err := c.Create(gctx, p); err != nil {
				return err
			}
			p.Status = straitv1.PeerStatus{Gateway: "node1", State: straitv1.PeerConnected, LatencyMicros: int64(300 + i),
				RxBytes: int64(1e6 + i), TxBytes: int64(2e6 + i), Endpoint: fmt.Sprintf("192.0.2.%d:4500", i%250+1)}
			return c.Status().Update(gctx, p)
		})
	}
	ready := true
	slice := func(name string, labels map[string]string, ip string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: labels},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}}}
	}
	var exports []straitv1.ExportSpec
	for i := range exported {
		name := fmt.Sprintf("svc%02d", i)
		exports = append(exports, straitv1.ExportSpec{Namespace: "shop", Name: name, Clusters: []string{"m"}})
		g.Go(func() error {
			if err := c.Create(gctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
				Spec: corev1.ServiceSpec{ClusterIP: fmt.Sprintf("10.0.0.%d", 10+i), Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}); err != nil {
				return err
			}
			if err := c.Create(gctx, slice(name+"-x", map[string]string{discoveryv1.LabelServiceName: name}, "10.200.0.1")); err != nil {
				return err
			}
			if err := c.Create(gctx, &mcsv1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}); err != nil {
				return err
			}
			return c.Create(gctx, slice(name+"-abcde", map[string]string{discoveryv1.LabelServiceName: name}, fmt.Sprintf("10.1.0.%d", 10+i)))
		})
	}
	for i := range factsImports {
		name := fmt.Sprintf("imp%05d", i)
		g.Go(func() error {
			return c.Create(gctx, slice(name+"-c0001", map[string]string{mcsv1.LabelServiceName: name}, fmt.Sprintf("10.2.%d.%d", i/250, i%250+1)))
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}

	// The hub's own member connection (members.Cache), as straitd builds it.
	conn := connectSynced(b, hubCache(b, m), members.Key{Cluster: "m"}, m)
	cs := &straitv1.ClusterSet{Spec: straitv1.ClusterSetSpec{Clusters: []straitv1.ClusterSpec{{Name: "m"}}, Exports: exports}}
	read := func(b *testing.B, wantPeers int) {
		var got int
		for b.Loop() {
			f, err := readFacts(ctx, conn.Reader, conn.Client, exportsByCluster(cs)["m"], false, nil)
			if err != nil {
				b.Fatal(err)
			}
			got = len(f.Peers)
			if n := len(f.Services); n != exported {
				b.Fatalf("read %d exported services, want %d", n, exported)
			}
		}
		if got != wantPeers {
			b.Fatalf("read %d Peers, want %d", got, wantPeers)
		}
	}
	// Without strait dns's summary in the Membership, the Peers are listed from the
	// API server (the hub does not watch them).
	b.Run("peers-listed", func(b *testing.B) { read(b, peers) })
	ms := &straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName},
		Spec: straitv1.MembershipSpec{ClusterSet: "m", ClusterID: "m", PodCIDRs: []string{"10.1.0.0/16"}, ServiceCIDRs: []string{"10.0.0.0/16"},
			Cable: straitv1.MemberCable{Driver: straitv1.CableWireGuard, Port: 51820}}}
	if err := c.Create(ctx, ms); err != nil {
		b.Fatal(err)
	}
	ms.Status.Connections = &straitv1.MemberConnections{Total: peers, Connected: peers}
	if err := c.Status().Update(ctx, ms); err != nil {
		b.Fatal(err)
	}
	for !reportsConnections(membershipIn(ctx, b, conn.Reader)) {
		time.Sleep(10 * time.Millisecond) // the informer's copy
	}
	b.Run("summary", func(b *testing.B) { read(b, 0) })
}

// membershipIn is the Membership rd holds, nil when none.
func membershipIn(ctx context.Context, b *testing.B, rd client.Reader) *straitv1.Membership {
	m := &straitv1.Membership{}
	if err := rd.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, m); err != nil {
		if client.IgnoreNotFound(err) != nil {
			b.Fatal(err)
		}
		return nil
	}
	return m
}
