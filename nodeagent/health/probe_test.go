package health

import (
	"context"
	"net/netip"
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
