package health

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/require"
)

func TestICMPProbe(t *testing.T) {
	require.Root(t)
	a, b := netns.New(t, "a"), netns.New(t, "b")
	netns.Veth(t, a, "eth0", b, "eth0")
	a.AddAddr(t, "eth0", "10.99.0.1/24")
	b.AddAddr(t, "eth0", "10.99.0.2/24")
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
