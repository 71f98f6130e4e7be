package gateway

import (
	"context"
	"net/netip"
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
)

type fakeDriver struct{ name straitv1.CableDriver }

func (f fakeDriver) Name() straitv1.CableDriver                                { return f.name }
func (fakeDriver) PublicKey() string                                           { return "" }
func (fakeDriver) Converge(context.Context, cable.Local, []cable.Remote) error { return nil }
func (fakeDriver) Connections(context.Context) ([]cable.Connection, error)     { return nil, nil }
func (fakeDriver) Cleanup(context.Context) error                               { return nil }

type routedDriver struct{ fakeDriver }

func (routedDriver) Route(r cable.Remote) (string, netip.Addr) { return "wan", r.IP }

func TestRoutes(t *testing.T) {
	remotes := []cable.Remote{
		{ClusterID: "c2", IP: netip.MustParseAddr("203.0.113.2"), CIDRs: []netip.Prefix{netip.MustParsePrefix("10.2.0.0/16"), netip.MustParsePrefix("10.102.0.5/16")}},
		{ClusterID: "c3", IP: netip.MustParseAddr("203.0.113.3"), CIDRs: []netip.Prefix{netip.MustParsePrefix("10.3.0.0/16")}},
		// Dual-stack, over an IPv6 underlay: the route's family is its Dst's.
		{ClusterID: "c4", IP: netip.MustParseAddr("fd73:18::4"), CIDRs: []netip.Prefix{
			netip.MustParsePrefix("fd73:4::1/64"), netip.MustParsePrefix("10.4.0.0/16"), netip.MustParsePrefix("fd73:4::/64")}},
	}
	if got := Routes(fakeDriver{name: straitv1.CableIPsec}, remotes, 1400); len(got) != 0 {
		t.Fatalf("a driver that routes itself got routes: %v", got)
	}
	got := Routes(routedDriver{}, remotes, 1400)
	want := []string{
		"table=4242 proto=0 10.2.0.0/16 via 203.0.113.2 dev wan onlink mtu=1400",
		"table=4242 proto=0 10.102.0.0/16 via 203.0.113.2 dev wan onlink mtu=1400",
		"table=4242 proto=0 10.3.0.0/16 via 203.0.113.3 dev wan onlink mtu=1400",
		"table=4242 proto=0 10.4.0.0/16 via fd73:18::4 dev wan onlink mtu=1400",
		"table=4242 proto=0 fd73:4::/64 via fd73:18::4 dev wan onlink mtu=1400",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("route %d = %s, want %s", i, got[i], want[i])
		}
	}
}

func TestOverhead(t *testing.T) {
	for d, want := range map[straitv1.CableDriver]int{straitv1.CableWireGuard: 80, straitv1.CableIPsec: 100, straitv1.CableVXLAN: 50, "": 0} {
		if got := Overhead(fakeDriver{name: d}); got != want {
			t.Errorf("Overhead(%q) = %d, want %d", d, got, want)
		}
	}
}

type familyDriver struct{ fakeDriver }

func (familyDriver) Overhead() int              { return 80 }
func (familyDriver) Overheads() cable.Overheads { return cable.Overheads{IPv4: 60, IPv6: 80} }

func TestUnderlayOverheadFollowsTheUnderlaysFamily(t *testing.T) {
	for _, tc := range []struct {
		d     cable.Driver
		local string
		want  int
	}{
		{familyDriver{}, "198.18.0.1", 60},
		{familyDriver{}, "::ffff:198.18.0.1", 60},
		{familyDriver{}, "fd73:18::1", 80},
		{familyDriver{}, "", 80}, // unknown underlay: the larger
		{fakeDriver{name: straitv1.CableVXLAN}, "fd73:18::1", 50},
	} {
		var local netip.Addr
		if tc.local != "" {
			local = netip.MustParseAddr(tc.local)
		}
		if got := UnderlayOverhead(tc.d, local); got != tc.want {
			t.Errorf("UnderlayOverhead(%T, %q) = %d, want %d", tc.d, tc.local, got, tc.want)
		}
	}
}
