package health

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/require"
)

// linkedPair is two namespaces named after name, a veth between them, .1 and .2 of
// prefix (a /24's first three octets) on either end.
func linkedPair(t *testing.T, name, prefix string) (a, b *netns.NS) {
	t.Helper()
	a, b = netns.New(t, name+"a"), netns.New(t, name+"b")
	netns.Veth(t, a, "eth0", b, "eth0")
	a.AddAddr(t, "eth0", prefix+".1/24")
	b.AddAddr(t, "eth0", prefix+".2/24")
	return a, b
}

func TestICMPProbe(t *testing.T) {
	require.Root(t)
	a, _ := linkedPair(t, "", "10.99.0")
	p := NewICMP(a.Handle, 5, 20*time.Millisecond, 500*time.Millisecond)
	src := netip.MustParseAddr("10.99.0.1")
	r, err := p.Probe(context.Background(), src, netip.MustParseAddr("10.99.0.2"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent != 5 || r.Received != 5 || r.LossPercent() != 0 || r.RTT <= 0 {
		t.Fatalf("reachable peer: %+v", r)
	}
	// An address nobody answers: all lost.
	r, err = p.Probe(context.Background(), src, netip.MustParseAddr("10.99.0.3"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Received != 0 || r.LossPercent() != 100 {
		t.Fatalf("unreachable peer: %+v", r)
	}
}

// FirstReply answers with the moment the first reply came, once the path carries
// traffic, however many requests went unanswered before; and gives up with ctx.
func TestFirstReplyTimesAPathComingUp(t *testing.T) {
	require.Root(t)
	a, _ := linkedPair(t, "f", "10.98.0")
	p := NewICMP(a.Handle, 1, 0, 100*time.Millisecond)
	src, dst := netip.MustParseAddr("10.98.0.1"), netip.MustParseAddr("10.98.0.2")
	// The path to dst opens 300 ms from now (an unreachable route until then, as a cable
	// not made yet): the requests before go nowhere.
	ip := func(args ...string) error {
		return netns.IP(context.Background(), append([]string{"-n", a.Name, "route"}, args...)...)
	}
	if err := ip("add", "unreachable", "10.98.0.2/32"); err != nil {
		t.Fatal(err)
	}
	// The path opens somewhere between the start of `ip route del` and its exit: a reply
	// may come back before the program has exited.
	type window struct{ from, to time.Time }
	up := make(chan window, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		from := time.Now()
		if err := ip("del", "unreachable", "10.98.0.2/32"); err != nil {
			t.Error(err)
		}
		up <- window{from, time.Now()}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	at, err := p.FirstReply(ctx, src, dst, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if w := <-up; at.Before(w.from) || at.Sub(w.to) > 100*time.Millisecond {
		t.Errorf("first reply %s after ip route del started (%s after it ended); want after it started, and within the 20-ms beat and a neighbour lookup of its end",
			at.Sub(w.from), at.Sub(w.to))
	}
	// Nobody at all: it gives up when ctx ends.
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if _, err := p.FirstReply(short, src, netip.MustParseAddr("10.98.0.3"), 20*time.Millisecond); err == nil {
		t.Error("a reply from an address nobody has")
	}
}

// An IPv6 health check is ICMPv6: answered, timed, and a dead address counted lost;
// FirstReply times it too; a probe across families is refused before anything is sent.
func TestICMPv6Probe(t *testing.T) {
	require.Root(t)
	a, b := netns.New(t, "v6a"), netns.New(t, "v6b")
	netns.Veth(t, a, "eth0", b, "eth0")
	a.AddAddr(t, "eth0", "fd99:0:0:1::1/64")
	b.AddAddr(t, "eth0", "fd99:0:0:1::2/64")
	p := NewICMP(a.Handle, 5, 20*time.Millisecond, 500*time.Millisecond)
	src, dst := netip.MustParseAddr("fd99:0:0:1::1"), netip.MustParseAddr("fd99:0:0:1::2")
	ctx := context.Background()
	// A new link carries IPv6 once the kernel has made it ready (carrier on both ends of
	// the veth): under load, a moment after the addresses are there.
	var r Result
	require.Eventually(t, 5*time.Second, "a whole round answered over IPv6", func() error {
		var err error
		if r, err = p.Probe(ctx, src, dst); err != nil {
			return err
		}
		if r.Sent != 5 || r.Received != 5 || r.LossPercent() != 0 || r.RTT <= 0 {
			return fmt.Errorf("reachable IPv6 peer: %+v", r)
		}
		return nil
	})
	r, err := p.Probe(ctx, src, netip.MustParseAddr("fd99:0:0:1::3"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Received != 0 || r.LossPercent() != 100 {
		t.Fatalf("unreachable IPv6 peer: %+v", r)
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := p.FirstReply(fctx, src, dst, 20*time.Millisecond); err != nil {
		t.Fatalf("first IPv6 reply: %v", err)
	}
	if _, err := p.Probe(ctx, netip.MustParseAddr("10.97.0.1"), dst); err == nil || !strings.Contains(err.Error(), "different families") {
		t.Fatalf("a probe from IPv4 to IPv6: got %v, want a refusal naming the families", err)
	}
}
