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
	"github.com/straitnet/strait/test/benchcpu"
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
	cpu := benchcpu.Start(b)
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
	cpu.Report()
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
	cpu := benchcpu.Start(b)
	for b.Loop() {
		s.answer(qs[i%len(qs)], false)
		i++
	}
	cpu.Report()
}

// udpWriter is a dns.ResponseWriter over UDP that keeps the last message written.
type udpWriter struct {
	addr net.UDPAddr
	last []byte
}

func (w *udpWriter) LocalAddr() net.Addr  { return &w.addr }
func (w *udpWriter) RemoteAddr() net.Addr { return &w.addr }
func (w *udpWriter) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	w.last = b
	return err
}
func (w *udpWriter) Write(b []byte) (int, error) {
	w.last = append(w.last[:0], b...)
	return len(b), nil
}
func (w *udpWriter) Close() error        { return nil }
func (w *udpWriter) TsigStatus() error   { return nil }
func (w *udpWriter) TsigTimersOnly(bool) {}
func (w *udpWriter) Hijack()             {}

// TestServeDNSAllocations counts what answering one ClusterSetIP question allocates, in
// the handler with metrics on: the reply's question and the A record (with its address
// and slice); the reply message and the packing buffer are reused.
func TestServeDNSAllocations(t *testing.T) {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{}, m)
	snap, names := tenThousand()
	s.Publish(snap)
	q := new(dns.Msg).SetQuestion(names[42], dns.TypeA)
	w := &udpWriter{addr: net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353}}
	allocs := testing.AllocsPerRun(1000, func() { s.ServeDNS(w, q) })
	var r dns.Msg
	if err := r.Unpack(w.last); err != nil || len(r.Answer) != 1 || r.Id != q.Id {
		t.Fatalf("answer %v: %v", &r, err)
	}
	if allocs > 2 {
		t.Errorf("%.1f allocations per question, want at most 2", allocs)
	}
}
