package server

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/straitnet/strait/dns/resolver"
)

// tenThousand is a snapshot of 10,000 ClusterSetIP services exported by three clusters,
// the local one not ready, so every answer is a round-robin pick.
func tenThousand() (*resolver.Snapshot, []string) {
	svcs := make([]resolver.Service, 0, 10000)
	names := make([]string, 0, 10000)
	for i := range 10000 {
		s := resolver.Service{Namespace: fmt.Sprintf("ns-%d", i/100), Name: fmt.Sprintf("svc-%d", i)}
		for k, c := range []string{"c1", "c2", "c3"} {
			s.Sources = append(s.Sources, resolver.ClusterSource{Cluster: c, Endpoints: []resolver.Endpoint{{
				Addr: netip.AddrFrom4([4]byte{10, byte(101 + k), byte(i / 250), byte(i%250 + 1)}), Ready: k > 0}}})
		}
		svcs = append(svcs, s)
		names = append(names, s.Name+"."+s.Namespace+".svc.clusterset.local.")
	}
	return resolver.NewSnapshot(resolver.Config{TTL: 5, ClusterNames: true, LocalCluster: "c1"}, svcs,
		func(string) bool { return true }, nil), names
}

// BenchmarkServeUDP is one UDP round trip over loopback to a server holding 10,000
// imported services, metrics on; run in parallel to load every core.
func BenchmarkServeUDP(b *testing.B) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	s := New(Options{Addr: "127.0.0.1:0", UDPSockets: 2}, m)
	snap, names := tenThousand()
	s.Publish(snap)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	go func() { _ = s.Run(ctx, func(u, _ net.Addr) { addr <- u.String() }) }()
	udp := <-addr
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		conn, err := dns.Dial("udp", udp)
		if err != nil {
			b.Error(err)
			return
		}
		defer func() { _ = conn.Close() }()
		i := 0
		for pb.Next() {
			q := new(dns.Msg).SetQuestion(names[i%len(names)], dns.TypeA)
			i++
			_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
			if err := conn.WriteMsg(q); err != nil {
				b.Error(err)
				return
			}
			r, err := conn.ReadMsg()
			if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
				b.Errorf("%s: %v %v", q.Question[0].Name, r, err)
				return
			}
		}
	})
}

// BenchmarkAnswer is the handler's work for one question, without sockets.
func BenchmarkAnswer(b *testing.B) {
	s := New(Options{}, nil)
	snap, names := tenThousand()
	s.Publish(snap)
	qs := make([]*dns.Msg, len(names))
	for i, n := range names {
		qs[i] = new(dns.Msg).SetQuestion(n, dns.TypeA)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.answer(qs[i%len(qs)], false)
		i++
	}
}
