package source

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/benchcpu"
)

// benchService is service i of a member with n imports exported by three clusters (as
// hack/dnsbench writes them): its ServiceImport and its slices, c1's not ready.
func benchService(i int) (*mcsv1.ServiceImport, []*discoveryv1.EndpointSlice) {
	yes, no := true, false
	ns, name := fmt.Sprintf("ns-%d", i/100), fmt.Sprintf("svc-%d", i)
	si := &mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP, Ports: []mcsv1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
	var slices []*discoveryv1.EndpointSlice
	for k, c := range []string{"c1", "c2", "c3"} {
		ready := &yes
		if k == 0 {
			ready = &no
		}
		sl := slice(ns, name, c, ep(fmt.Sprintf("10.%d.%d.%d", 101+k, i/250, i%250+1), ready, ""))
		slices = append(slices, &sl)
	}
	return si, slices
}

// benchState is a store holding n services as benchService makes them, and the
// Membership and Peers of c1.
func benchState(tb testing.TB, n int) *state {
	s := newState(newInterner(), nil)
	add := func(obj any) {
		if err := s.apply(s.in.record(obj), opAdd); err != nil {
			tb.Fatal(err)
		}
	}
	add(&straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName},
		Spec: straitv1.MembershipSpec{ClusterID: "c1"}})
	for _, c := range []string{"c2", "c3"} {
		p := peer(c, "", nil)
		p.Namespace, p.Name = straitv1.SystemNamespace, c
		add(&p)
	}
	for i := range n {
		si, slices := benchService(i)
		add(si)
		for _, sl := range slices {
			add(sl)
		}
	}
	return s
}

// BenchmarkRebuild is what one change costs with 10,000 imports exported by three
// clusters: a slice flips its readiness and a snapshot is built.
func BenchmarkRebuild(b *testing.B) {
	s := benchState(b, 10000)
	o := Overrides{}
	snap := s.build(straitv1.SystemNamespace, o, 0)
	b.ReportAllocs()
	i := 0
	cpu := benchcpu.Start(b)
	for b.Loop() {
		_, slices := benchService(i % 10000)
		if i/10000%2 == 0 {
			yes := true
			slices[0].Endpoints[0].Conditions.Ready = &yes
		}
		if err := s.apply(s.in.record(slices[0]), opUpdate); err != nil {
			b.Fatal(err)
		}
		snap = s.build(straitv1.SystemNamespace, o, uint32(i))
		i++
	}
	cpu.Report()
	if snap.Services() != 10000 {
		b.Fatalf("%d services", snap.Services())
	}
}

// TestMemoryPerService bounds what the store keeps per imported service (three slices
// of one endpoint each), snapshot included since it shares the store's entries. The
// informer cache of typed objects it replaced kept about 3.9 kB per such service
// (docs/performance-dns.md).
func TestMemoryPerService(t *testing.T) {
	const n, limit = 10000, 500
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	s := benchState(t, n)
	snap := s.build(straitv1.SystemNamespace, Overrides{}, 1)
	after := heap()
	per := int(after-before) / n
	t.Logf("%d bytes per service (%d services, %d records)", per, snap.Services(), snap.Records())
	if snap.Services() != n || snap.Records() != 2*n {
		t.Fatalf("snapshot with %d services, %d records; want %d and %d", snap.Services(), snap.Records(), n, 2*n)
	}
	if per > limit {
		t.Errorf("the store keeps %d bytes per service, more than %d", per, limit)
	}
	runtime.KeepAlive(s)
}
