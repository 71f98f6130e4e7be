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
// nothing. Other ports pass throughout.
func TestFenceEndsWithTheTerm(t *testing.T) {
	require.Root(t)
	ctx := context.Background()
	node, peer := netns.New(t, "node"), netns.New(t, "peer")
	netns.Veth(t, node, "eth0", peer, "eth0")
	node.AddAddr(t, "eth0", "10.0.0.1/24")
	peer.AddAddr(t, "eth0", "10.0.0.2/24")
	k, err := NewLinux(node.Handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	const port = 4803
	in, out, other := "10.0.0.1:4803", "10.0.0.2:4803", "10.0.0.1:4804"
	passes := func(what string, want bool) {
		t.Helper()
		if got := peer.UDPReaches(t, node, in, 200*time.Millisecond); got != want {
			t.Errorf("%s: udp into the node on the cable port arrived %v, want %v", what, got, want)
		}
		if got := node.UDPReaches(t, peer, out, 200*time.Millisecond); got != want {
			t.Errorf("%s: udp out of the node to a gateway's cable port arrived %v, want %v", what, got, want)
		}
		if !peer.UDPReaches(t, node, other, 200*time.Millisecond) {
			t.Errorf("%s: udp to another port was dropped", what)
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
	tbl, err := k.NFTable(ctx, IPv4, FenceTable)
	if err != nil || tbl == nil {
		t.Fatalf("fence table: %v %v", tbl, err)
	}
	if err := k.Unfence(ctx); err != nil {
		t.Fatal(err)
	}
	passes("unfenced", true)
	if tbl, err := k.NFTable(ctx, IPv4, FenceTable); err != nil || tbl != nil {
		t.Errorf("after Unfence: table %+v, %v; want none", tbl, err)
	}
	if err := k.Unfence(ctx); err != nil {
		t.Errorf("Unfence of no fence: %v", err)
	}
	// A table deleted behind the fence's back is built again on the next renewal.
	if err := k.Fence(ctx, port, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := k.NFTApply(ctx, NFTTx{Table: FenceTable, DeleteTable: true}); err != nil {
		t.Fatal(err)
	}
	if err := k.Fence(ctx, port, time.Time{}); err != nil {
		t.Fatalf("renewal after the table was deleted: %v", err)
	}
	passes("rebuilt, term ended", false)
	if err := k.Unfence(ctx); err != nil {
		t.Fatal(err)
	}
}
