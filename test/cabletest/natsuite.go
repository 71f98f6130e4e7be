package cabletest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/require"
)

// RunNAT is the real-kernel test of a driver through a NAT: site B's gateway sits behind
// a router doing nat (nftables in the router's namespace), owning only a private
// address. After Converge pod ↔ pod ICMP and TCP work; the connections report the
// endpoint in use and the NAT; converging again changes nothing; after an idle period
// longer than the router's UDP conntrack timeout the router still holds the same mapping
// (the driver's keepalives kept it) and at most 2 s of echoes go unanswered; cleanup
// leaves nothing. A driver without NAT traversal (Suite.NoNATTraversal) must
// refuse to run behind masquerade instead.
func RunNAT(t *testing.T, s Suite, nat NAT) {
	require.Root(t, "ping", "nft")
	lab := newLab(t, nat)
	a, b := &site{Site: lab.A}, &site{Site: lab.B}
	for _, x := range []*site{a, b} {
		x.baseline = networkState(t, x.GatewayNS)
		if s.Setup != nil {
			x.env, x.stop = s.Setup(t, lab, x.Site)
		}
		x.gw = StartGateway(t, x.GatewayNS, x.env...)
		x.key = must(t)(x.gw.PublicKey())
	}
	if nat == NATMasquerade && s.NoNATTraversal {
		err := b.gw.Converge(b.Local(s.Port, s.PSK), a.Remote(s.Port, a.key))
		if err == nil || !strings.Contains(err.Error(), "masquerade") {
			t.Fatalf("converging behind masquerade: %v, want a refusal that names masquerade", err)
		}
		cleanupNothingLeft(t, lab, a, b)
		return
	}
	converge := func(x, peer *site) error {
		return x.gw.Converge(x.Local(s.Port, s.PSK), peer.Remote(s.Port, peer.key))
	}
	// The side behind the NAT first: behind masquerade the other side cannot do a thing
	// before it has heard from it.
	for _, pair := range [][2]*site{{b, a}, {a, b}} {
		if err := converge(pair[0], pair[1]); err != nil {
			t.Fatalf("converge %s: %v", pair[0].ClusterID, err)
		}
	}
	resync := func() { _ = converge(b, a); _ = converge(a, b) }
	requireTraffic(t, lab, s.ConnectTimeout, resync)
	requireConnected(t, a.gw, b.ClusterID, s.ConnectTimeout)
	requireConnected(t, b.gw, a.ClusterID, s.ConnectTimeout)

	t.Run("the connections show the endpoint in use and the NAT", func(t *testing.T) {
		// b sends to a's own address; a sends to b's public one, behind masquerade on a
		// port its router chose.
		want := map[string]string{b.ClusterID: fmt.Sprintf("%s:%d", a.WANIP, s.Port), a.ClusterID: b.WANIP.String() + ":"}
		if nat == NATOneToOne {
			want[a.ClusterID] = fmt.Sprintf("%s:%d", b.WANIP, s.Port)
		}
		for _, x := range []*site{a, b} {
			peer := b
			if x == b {
				peer = a
			}
			conns, err := x.gw.Connections()
			if err != nil {
				t.Fatal(err)
			}
			if len(conns) != 1 {
				t.Fatalf("%s: connections %+v, want one", x.ClusterID, conns)
			}
			c := conns[0]
			if got := c.Endpoint.String(); !strings.HasPrefix(got, want[x.ClusterID]) || (nat == NATOneToOne && got != want[x.ClusterID]) {
				t.Errorf("%s: endpoint of %s in use %s, want %s…", x.ClusterID, peer.ClusterID, got, want[x.ClusterID])
			}
			// The side behind the NAT always knows; the other side sees a masquerade (an
			// address and port it was never told) but not a 1:1 mapping, which is
			// transparent to it.
			if wantNAT := x == b || nat == NATMasquerade; c.NATDetected != wantNAT {
				t.Errorf("%s: NAT detected %v, want %v", x.ClusterID, c.NATDetected, wantNAT)
			}
		}
	})

	t.Run("converging again changes nothing", func(t *testing.T) {
		before := []string{must(t)(a.gw.Dump()), must(t)(b.gw.Dump())}
		resync()
		after := []string{must(t)(a.gw.Dump()), must(t)(b.gw.Dump())}
		for i := range before {
			if before[i] != after[i] {
				t.Errorf("state changed on the second Converge:\nbefore:\n%s\nafter:\n%s", before[i], after[i])
			}
		}
	})

	t.Run("an idle period past the NAT's UDP timeout leaves no gap", func(t *testing.T) {
		idle := (UDPTimeout + 5) * time.Second
		t.Logf("idle for %v (the router forgets UDP flows after %d s)", idle, UDPTimeout)
		// The cable's keepalives must keep the router's mapping: the same conntrack entry
		// before and after. A driver without them (vxlan, 1:1 only) needs none: its
		// mapping is made again the same way.
		keep := !s.NoNATTraversal
		var before uint64
		var port uint16
		if keep {
			var err error
			if before, port, err = cableFlow(lab.B, int(s.Port)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(idle)
		if keep {
			after, portAfter, err := cableFlow(lab.B, int(s.Port))
			if err != nil || after != before || portAfter != port {
				t.Errorf("the router's mapping of the cable lapsed while idle: before started at %d to port %d, after: %d to port %d (%v)",
					before, port, after, portAfter, err)
			}
		}
		// From the side that cannot be dialed behind masquerade: only a mapping kept
		// alive lets its packets in. A mapping that lapsed costs a dead-peer detection
		// (10 s) or more before the other side learns the new one.
		gap, err := PingGap(lab.A.PodNS, lab.B.PodIP, 10*time.Second)
		if err != nil {
			t.Fatalf("pod a → pod b after the idle period: %v", err)
		}
		t.Logf("pod a → pod b after the idle period: the first %v of echoes unanswered", gap)
		if gap > 2*time.Second {
			t.Errorf("a gap of %v after the idle period, want at most 2 s", gap)
		}
	})

	cleanupNothingLeft(t, lab, a, b)
}

// cleanupNothingLeft cleans both gateways up and checks nothing of the driver is left.
func cleanupNothingLeft(t *testing.T, lab *Lab, a, b *site) {
	t.Run("cleanup leaves nothing", func(t *testing.T) { checkNothingLeft(t, lab, a, b) })
}

// checkNothingLeft has each gateway clean up after its driver and exit, then checks
// that no file, network state or process of the driver is left and that the pods no
// longer reach each other.
func checkNothingLeft(t *testing.T, lab *Lab, a, b *site) {
	t.Helper()
	for _, x := range []*site{a, b} {
		files, err := x.gw.Cleanup()
		if err != nil {
			t.Fatalf("cleanup %s: %v", x.ClusterID, err)
		}
		if files != "" {
			t.Errorf("files left by %s's driver: %s", x.ClusterID, files)
		}
		if err := x.gw.Exit(); err != nil {
			t.Errorf("gateway %s: %v", x.ClusterID, err)
		}
		if x.stop != nil {
			x.stop()
		}
		if after := networkState(t, x.GatewayNS); after != x.baseline {
			t.Errorf("%s differs from before the driver ran:\nbefore:\n%s\nafter:\n%s", x.GatewayNS, x.baseline, after)
		}
		if pids := netns.Pids(x.GatewayNS); len(pids) > 0 {
			t.Errorf("processes left in %s: %v", x.GatewayNS, pids)
		}
	}
	if err := Ping(lab.A.PodNS, lab.B.PodIP); err == nil {
		t.Errorf("pod a still reaches pod b after cleanup")
	}
}
