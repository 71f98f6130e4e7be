package gateway

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/kernel"
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
		// Dual-stack, over an IPv6 underlay: the route's family is its Dst's, and an IPv4
		// CIDR has no IPv6 next hop to take (FamilyRouter gives one per family).
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

type deviceDriver struct{ fakeDriver }

func (deviceDriver) Route(cable.Remote) (string, netip.Addr) { return "wg-strait", netip.Addr{} }

type vtepDriver struct{ routedDriver }

func (vtepDriver) RouteFamily(r cable.Remote, f kernel.Family) (string, netip.Addr) {
	if f == kernel.IPv6 {
		return "vx-cable", netip.MustParseAddr("2001:db8:f::2")
	}
	return "vx-cable", r.IP
}

// TestRoutesPerFamily: a remote's IPv6 CIDRs are routed into the cable beside its IPv4
// ones: into a device with no next hop, or through the next hop of their own family; a
// next hop of the other family gives no route.
func TestRoutesPerFamily(t *testing.T) {
	remotes := []cable.Remote{{ClusterID: "c2", IP: netip.MustParseAddr("203.0.113.2"),
		CIDRs: []netip.Prefix{netip.MustParsePrefix("10.2.0.0/16"), netip.MustParsePrefix("2001:db8:2::/56")}}}
	for name, tc := range map[string]struct {
		d    cable.Driver
		want []string
	}{
		"device": {deviceDriver{}, []string{
			"table=4242 proto=0 10.2.0.0/16 dev wg-strait mtu=1400",
			"table=4242 proto=0 2001:db8:2::/56 dev wg-strait mtu=1400"}},
		"next hop per family": {vtepDriver{}, []string{
			"table=4242 proto=0 10.2.0.0/16 via 203.0.113.2 dev vx-cable onlink mtu=1400",
			"table=4242 proto=0 2001:db8:2::/56 via 2001:db8:f::2 dev vx-cable onlink mtu=1400"}},
		"one IPv4 next hop": {routedDriver{}, []string{
			"table=4242 proto=0 10.2.0.0/16 via 203.0.113.2 dev wan onlink mtu=1400"}},
	} {
		var got []string
		for _, r := range Routes(tc.d, remotes, 1400) {
			got = append(got, r.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %q, want %q", name, got, tc.want)
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
