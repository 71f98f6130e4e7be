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
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/straitnet/strait/dns/resolver"
	"github.com/straitnet/strait/test/promcheck"
)

func testSnapshot() *resolver.Snapshot {
	big := resolver.ClusterSource{Cluster: "c1"}
	for i := range 100 {
		big.Endpoints = append(big.Endpoints, resolver.Endpoint{
			Addr: netip.AddrFrom4([4]byte{10, 1, 2, byte(i)}), Ready: true, Hostname: fmt.Sprintf("pod-%d", i)})
	}
	return resolver.NewSnapshot(resolver.Config{TTL: 5, ClusterNames: true, LocalCluster: "c1"}, []resolver.Service{
		{Namespace: "default", Name: "web", Sources: []resolver.ClusterSource{{Cluster: "c1",
			Endpoints: []resolver.Endpoint{{Addr: netip.MustParseAddr("10.1.0.10"), Ready: true}}}}},
		{Namespace: "default", Name: "big", Headless: true, Sources: []resolver.ClusterSource{big}},
	}, func(string) bool { return true }, nil)
}

// startServer runs a server on loopback with two UDP sockets and returns it and its
// UDP and TCP addresses; it stops when the test ends.
func startServer(t *testing.T, publish bool) (*Server, *Metrics, string, string) {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	s := New(Options{Addr: "127.0.0.1:0", UDPSockets: 2}, m)
	if publish {
		s.Publish(testSnapshot())
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, func(u, tc net.Addr) { addrs <- [2]string{u.String(), tc.String()} })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case a := <-addrs:
		return s, m, a[0], a[1]
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("server did not start")
	}
	return nil, nil, "", ""
}

func exchange(t *testing.T, network, addr, name string, qtype uint16, edns uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	q := new(dns.Msg).SetQuestion(name, qtype)
	if edns > 0 {
		q.SetEdns0(edns, false)
	}
	r, _, err := c.Exchange(q, addr)
	if err != nil {
		t.Fatalf("%s %s %s: %v", network, name, dns.TypeToString[qtype], err)
	}
	return r
}

func TestUDPAndTCP(t *testing.T) {
	_, m, udp, tcp := startServer(t, true)
	for _, c := range []struct{ network, addr string }{{"udp", udp}, {"tcp", tcp}} {
		r := exchange(t, c.network, c.addr, "web.default.svc.clusterset.local.", dns.TypeA, 0)
		if r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "10.1.0.10" {
			t.Errorf("%s: got %v, want one authoritative A 10.1.0.10", c.network, r)
		}
		r = exchange(t, c.network, c.addr, "kubernetes.default.svc.cluster.local.", dns.TypeA, 0)
		if r.Rcode != dns.RcodeRefused || r.Authoritative {
			t.Errorf("%s outside the zone: rcode %s aa=%v, want REFUSED, not authoritative", c.network, dns.RcodeToString[r.Rcode], r.Authoritative)
		}
		r = exchange(t, c.network, c.addr, "nope.default.svc.clusterset.local.", dns.TypeA, 0)
		if r.Rcode != dns.RcodeNameError || len(r.Ns) != 1 {
			t.Errorf("%s unknown name: got %v, want NXDOMAIN with the SOA", c.network, r)
		}
	}
	if got := testutil.ToFloat64(m.queries.WithLabelValues("A", "NOERROR")); got != 2 {
		t.Errorf("queries_total{type=A,rcode=NOERROR} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.queries.WithLabelValues("A", "REFUSED")); got != 2 {
		t.Errorf("queries_total{type=A,rcode=REFUSED} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.services); got != 2 {
		t.Errorf("snapshot_services = %v, want 2", got)
	}
	if n := testutil.CollectAndCount(m.latency); n != 1 {
		t.Errorf("latency histogram: %d series, want 1", n)
	}
}

func TestTruncationAndEDNS0(t *testing.T) {
	_, _, udp, tcp := startServer(t, true)
	const big = "big.default.svc.clusterset.local."

	plain := exchange(t, "udp", udp, big, dns.TypeA, 0)
	if !plain.Truncated || len(plain.Answer) == 0 || len(plain.Answer) >= 100 {
		t.Fatalf("UDP without EDNS0: TC=%v with %d answers, want TC and a partial answer", plain.Truncated, len(plain.Answer))
	}
	if n := wireSize(t, plain); n > dns.MinMsgSize {
		t.Errorf("UDP without EDNS0: %d bytes, want at most 512", n)
	}

	edns := exchange(t, "udp", udp, big, dns.TypeA, 4096)
	if !edns.Truncated || len(edns.Answer) <= len(plain.Answer) {
		t.Errorf("UDP with EDNS0 4096: TC=%v with %d answers, want TC with more than %d answers", edns.Truncated, len(edns.Answer), len(plain.Answer))
	}
	if opt := edns.IsEdns0(); opt == nil || opt.UDPSize() != DefaultUDPSize {
		t.Errorf("UDP with EDNS0: OPT %v, want our buffer size %d", opt, DefaultUDPSize)
	}
	if n := wireSize(t, edns); n > DefaultUDPSize {
		t.Errorf("UDP with EDNS0 4096: %d bytes, want at most our cap %d", n, DefaultUDPSize)
	}

	// The client sees TC and retries over TCP, where everything fits.
	full := exchange(t, "tcp", tcp, big, dns.TypeA, 0)
	if full.Truncated || len(full.Answer) != 100 {
		t.Errorf("TCP: TC=%v with %d answers, want all 100", full.Truncated, len(full.Answer))
	}
}

func TestServfailBeforeFirstSnapshot(t *testing.T) {
	s, _, udp, _ := startServer(t, false)
	if r := exchange(t, "udp", udp, "web.default.svc.clusterset.local.", dns.TypeA, 0); r.Rcode != dns.RcodeServerFailure {
		t.Errorf("before the first snapshot: %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	s.Publish(testSnapshot())
	if r := exchange(t, "udp", udp, "web.default.svc.clusterset.local.", dns.TypeA, 0); r.Rcode != dns.RcodeSuccess {
		t.Errorf("after Publish: %s, want NOERROR", dns.RcodeToString[r.Rcode])
	}
}

func TestMalformedQuestions(t *testing.T) {
	_, _, udp, _ := startServer(t, true)
	c := &dns.Client{Timeout: 5 * time.Second}
	q := new(dns.Msg).SetQuestion("web.default.svc.clusterset.local.", dns.TypeA)
	q.Question[0].Qclass = dns.ClassCHAOS
	if r, _, err := c.Exchange(q, udp); err != nil || r.Rcode != dns.RcodeRefused {
		t.Errorf("class CH: %v %v, want REFUSED", r, err)
	}
	q = new(dns.Msg).SetQuestion("web.default.svc.clusterset.local.", dns.TypeA)
	q.Opcode = dns.OpcodeStatus
	if r, _, err := c.Exchange(q, udp); err != nil || r.Rcode != dns.RcodeNotImplemented {
		t.Errorf("opcode STATUS: %v %v, want NOTIMP", r, err)
	}
}

// wireSize is the size of m packed as a server sends it, compressed.
func wireSize(t *testing.T, m *dns.Msg) int {
	t.Helper()
	m.Compress = true
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestMetricsPassPromtool answers a question of each kind the server counts, then lints
// the server's series as a user's CI would.
func TestMetricsPassPromtool(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	m.observe(dns.TypeA, dns.RcodeSuccess, t0, t0.Add(100*time.Microsecond))
	before := time.Now().Unix()
	m.snapshot(testSnapshot())
	// Answers from a snapshot published 30 s before them; a change served 40 ms after
	// its watch event.
	published := time.Unix(0, m.published.Load())
	m.observe(dns.TypeAAAA, dns.RcodeNameError, published.Add(30*time.Second), published.Add(30*time.Second+200*time.Microsecond))
	m.Propagated(40 * time.Millisecond)
	if n, sum := histogramOf(t, reg, "strait_dns_answer_snapshot_age_seconds"); n != 1 || sum < 29.99 || sum > 30.01 {
		t.Errorf("strait_dns_answer_snapshot_age_seconds: %d answers, sum %v; want the one after the snapshot, 30 s", n, sum)
	}
	if n, sum := histogramOf(t, reg, "strait_dns_propagation_seconds"); n != 1 || sum != 0.04 {
		t.Errorf("strait_dns_propagation_seconds: %d, sum %v; want 1, 0.04", n, sum)
	}
	m.SourceError("serviceimports")
	m.SourceError("serviceimports")
	if got := testutil.ToFloat64(m.sourceErrors.WithLabelValues("serviceimports")); got != 2 {
		t.Errorf("strait_dns_source_errors_total{resource=serviceimports} = %v after two errors", got)
	}
	if got := testutil.ToFloat64(m.built); got < float64(before) {
		t.Errorf("strait_dns_snapshot_timestamp_seconds = %v, before the snapshot (%d)", got, before)
	}
	promcheck.Metrics(t, promcheck.Gathered(t, reg), "strait_dns_")
}

// histogramOf is the count and sum of a histogram family's one series.
func histogramOf(t *testing.T, reg *prometheus.Registry, name string) (uint64, float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("no histogram %s with one series", name)
	return 0, 0
}
