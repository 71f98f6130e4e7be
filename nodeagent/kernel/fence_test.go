package kernel

import (
	"context"
	"testing"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/require"
)

// TestFenceEndsWithTheTerm: the cable's UDP port passes, both ways, while the term
// lasts and is dropped once it has run out, with no call in between (the agent may be
// gone); a zero term drops at once, a new one lets it pass again, and Unfence leaves
// nothing. Other ports pass throughout. All of it over IPv4 and IPv6 alike (a cable over
// an IPv6 underlay).
func TestFenceEndsWithTheTerm(t *testing.T) {
	require.Root(t)
	ctx := context.Background()
	node, peer := netns.New(t, "node"), netns.New(t, "peer")
	for _, ns := range []*netns.NS{node, peer} {
		if err := ns.SetSysctl("net/ipv6/conf/default/accept_dad", "0"); err != nil { // usable at once
			t.Fatal(err)
		}
	}
	netns.Veth(t, node, "eth0", peer, "eth0")
	node.AddAddr(t, "eth0", "10.0.0.1/24")
	peer.AddAddr(t, "eth0", "10.0.0.2/24")
	node.AddAddr(t, "eth0", "2001:db8::1/64")
	peer.AddAddr(t, "eth0", "2001:db8::2/64")
	k, err := NewLinux(node.Handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	const port = 4803
	passes := func(what string, want bool) {
		t.Helper()
		for _, a := range []struct{ node, peer string }{{"10.0.0.1", "10.0.0.2"}, {"[2001:db8::1]", "[2001:db8::2]"}} {
			in, out, other := a.node+":4803", a.peer+":4803", a.node+":4804"
			if got := peer.UDPReaches(t, node, in, 200*time.Millisecond); got != want {
				t.Errorf("%s: udp into the node on the cable port (%s) arrived %v, want %v", what, in, got, want)
			}
			if got := node.UDPReaches(t, peer, out, 200*time.Millisecond); got != want {
				t.Errorf("%s: udp out of the node to a gateway's cable port (%s) arrived %v, want %v", what, out, got, want)
			}
			if !peer.UDPReaches(t, node, other, 200*time.Millisecond) {
				t.Errorf("%s: udp to another port (%s) was dropped", what, other)
			}
		}
	}
	passes("no fence", true)

	term := 1500 * time.Millisecond
	if err := k.Fence(ctx, port, time.Now().Add(term)); err != nil {
		t.Fatal(err)
	}
	passes("within the term", true)
	// Renewed twice without a rebuild: the rules (and their counters) stay.
	for range 2 {
		if err := k.Fence(ctx, port, time.Now().Add(term)); err != nil {
			t.Fatal(err)
		}
	}
	renewed := time.Now()
	passes("after a renewal", true)
	time.Sleep(time.Until(renewed.Add(term + 100*time.Millisecond)))
	passes("after the term, with no call since", false)

	if err := k.Fence(ctx, port, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	passes("a new term", true)
	if err := k.Fence(ctx, port, time.Time{}); err != nil {
		t.Fatal(err)
	}
	passes("term ended by the agent", false)
	for _, f := range []Family{IPv4, IPv6} {
		if tbl, err := k.NFTable(ctx, f, FenceTable); err != nil || tbl == nil {
			t.Fatalf("fence table %s: %v %v", f, tbl, err)
		}
	}
	if err := k.Unfence(ctx); err != nil {
		t.Fatal(err)
	}
	passes("unfenced", true)
	for _, f := range []Family{IPv4, IPv6} {
		if tbl, err := k.NFTable(ctx, f, FenceTable); err != nil || tbl != nil {
			t.Errorf("after Unfence: table %s %+v, %v; want none", f, tbl, err)
		}
	}
	if err := k.Unfence(ctx); err != nil {
		t.Errorf("Unfence of no fence: %v", err)
	}
	// A table deleted behind the fence's back, of either family, is built again on the
	// next renewal.
	for _, f := range []Family{IPv4, IPv6} {
		if err := k.Fence(ctx, port, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := k.NFTApply(ctx, NFTTx{Table: FenceTable, Family: f, DeleteTable: true}); err != nil {
			t.Fatal(err)
		}
		if err := k.Fence(ctx, port, time.Time{}); err != nil {
			t.Fatalf("renewal after the %s table was deleted: %v", f, err)
		}
		passes("rebuilt after table "+string(f)+" went, term ended", false)
	}
	if err := k.Unfence(ctx); err != nil {
		t.Fatal(err)
	}
}
