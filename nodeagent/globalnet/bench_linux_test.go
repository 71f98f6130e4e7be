package globalnet

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/straitnet/strait/nodeagent/kernel"
)

// mappings is n single-endpoint global IPs (242.1.0.0/16 → 10.7.128.0/17 and up; every
// other one a headless pod's, the rest services on port 80), plus 242.0.1.10:7001 →
// pod1:7001 that the throughput benchmark uses.
func mappings(n int) Input {
	in := Input{
		LocalCIDRs:        []netip.Prefix{netip.MustParsePrefix("10.7.0.0/16")},
		RemoteGlobalCIDRs: []netip.Prefix{netip.MustParsePrefix("242.0.2.0/24")},
		EgressIPs:         []netip.Addr{a("242.0.1.1"), a("242.0.1.2")},
		Ingress: []Ingress{{GlobalIP: a("242.0.1.10"), Endpoints: []netip.Addr{a("10.7.0.5")},
			Ports: []Port{{Port: 7001, Target: 7001}}}},
	}
	for i := 1; i < n; i++ {
		in.Ingress = append(in.Ingress, Ingress{GlobalIP: a(fmt.Sprintf("242.1.%d.%d", i/256, i%256)),
			Endpoints: []netip.Addr{a(fmt.Sprintf("10.7.%d.%d", 128+i/256, i%256))}, Pod: i%2 == 0,
			Ports: []Port{{Port: 80, Target: 8080}}})
	}
	return in
}

// BenchmarkProgram10kGlobalIPs: Compute and Apply 10,000 global IP mappings into an
// empty kernel (one chunked nftables transaction), then one changed mapping among them.
func BenchmarkProgram10kGlobalIPs(b *testing.B) {
	l := newNATLab(b)
	ctx := context.Background()
	in := mappings(10000)
	changed := mappings(10000)
	changed.Ingress[5000].Endpoints = []netip.Addr{a("10.7.99.99")}
	var full, one time.Duration
	for range b.N {
		if err := kernel.Cleanup(ctx, l.k, own); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := kernel.Apply(ctx, l.k, own, Compute(in)); err != nil {
			b.Fatal(err)
		}
		full += time.Since(start)
		start = time.Now()
		if err := kernel.Apply(ctx, l.k, own, Compute(changed)); err != nil {
			b.Fatal(err)
		}
		one += time.Since(start)
	}
	b.ReportMetric(float64(full.Milliseconds())/float64(b.N), "ms/10k-from-empty")
	b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "ms/1-change-of-10k")
}

// BenchmarkNATThroughput compares one TCP stream through the ingress DNAT with 10 and
// with 10,000 mappings programmed (same run, same path).
func BenchmarkNATThroughput(b *testing.B) {
	l := newNATLab(b)
	ctx := context.Background()
	var ln net.Listener
	if err := l.pod1.Do(func() error {
		var err error
		ln, err = net.Listen("tcp4", "0.0.0.0:7001")
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	stream := func() float64 {
		c, err := l.remote.Dial(ctx, "242.0.1.10:7001")
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		buf := make([]byte, 128<<10)
		var n int64
		start := time.Now()
		for time.Since(start) < time.Second {
			w, err := c.Write(buf)
			if err != nil {
				b.Fatal(err)
			}
			n += int64(w)
		}
		return float64(n*8) / time.Since(start).Seconds() / 1e9
	}
	var few, many float64
	for range b.N {
		if err := kernel.Apply(ctx, l.k, own, Compute(mappings(10))); err != nil {
			b.Fatal(err)
		}
		few += stream()
		if err := kernel.Apply(ctx, l.k, own, Compute(mappings(10000))); err != nil {
			b.Fatal(err)
		}
		many += stream()
	}
	b.ReportMetric(few/float64(b.N), "Gbit/s-10-mappings")
	b.ReportMetric(many/float64(b.N), "Gbit/s-10k-mappings")
	b.ReportMetric(many/few, "ratio-10k/10")
}
