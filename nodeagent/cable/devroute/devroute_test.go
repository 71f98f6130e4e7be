package devroute_test

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/devroute"
	"github.com/straitnet/strait/test/require"
)

var routing = cable.Routing{Table: 7310, Protocol: 207}

// newNamespace returns a netlink handle into a fresh namespace with two up veth ends,
// "cab" (the driver's device) and "other", and removes it when t ends.
func newNamespace(t *testing.T) *netlink.Handle {
	t.Helper()
	require.Root(t)
	n := netns.New(t, "devroute")
	n.Run(t, "ip", "link", "add", "cab", "type", "veth", "peer", "name", "other")
	n.Run(t, "ip", "addr", "add", "192.0.2.1/24", "dev", "other")
	for _, l := range []string{"cab", "other"} {
		n.Run(t, "ip", "link", "set", l, "up")
	}
	return n.NL
}

func TestSyncOwnsOnlyItsRoutes(t *testing.T) {
	h := newNamespace(t)
	cab, err := h.LinkByName("cab")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := h.LinkByName("other")
	// Routes that are not the driver's: another protocol, another link, another table.
	foreign := []*netlink.Route{
		{LinkIndex: cab.Attrs().Index, Dst: ipnet("10.9.0.0/16"), Table: routing.Table, Protocol: 4},
		{LinkIndex: other.Attrs().Index, Dst: ipnet("10.8.0.0/16"), Table: routing.Table, Protocol: netlink.RouteProtocol(routing.Protocol)},
		{LinkIndex: cab.Attrs().Index, Dst: ipnet("10.7.0.0/16"), Table: 254, Protocol: netlink.RouteProtocol(routing.Protocol)},
	}
	for _, r := range foreign {
		if err := h.RouteAdd(r); err != nil {
			t.Fatalf("add %s: %v", r, err)
		}
	}

	want := []devroute.Route{
		{Dst: netip.MustParsePrefix("10.2.0.0/16")},
		{Dst: netip.MustParsePrefix("10.3.0.0/16"), Gw: netip.MustParseAddr("243.0.2.9")},
		{Dst: netip.MustParsePrefix("fd73:2::/64"), MTU: 1380},
		{Dst: netip.MustParsePrefix("fd73:3::/64"), Gw: netip.MustParseAddr("fdf3:7301::c612:3")},
	}
	steps := [][]devroute.Route{
		want,
		want, // again: nothing changes
		{want[0], {Dst: want[1].Dst, Gw: netip.MustParseAddr("243.0.2.10")}, want[2], want[3]}, // next hop moved
		{want[0], {Dst: want[2].Dst, MTU: 1400}},                                               // MTU changed
		{want[0]},
		nil,
	}
	for i, step := range steps {
		if err := devroute.Sync(h, cab, routing, step); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		got, err := devroute.List(h, cab, routing)
		if err != nil {
			t.Fatal(err)
		}
		if !sameRoutes(got, step) {
			t.Errorf("step %d: routes %v, want %v", i, got, step)
		}
	}
	for _, r := range foreign {
		found, err := h.RouteListFiltered(netlink.FAMILY_V4, r, netlink.RT_FILTER_TABLE|netlink.RT_FILTER_OIF|netlink.RT_FILTER_DST|netlink.RT_FILTER_PROTOCOL)
		if err != nil || len(found) != 1 {
			t.Errorf("foreign route %s was touched: %v %v", r, found, err)
		}
	}
}

func TestUnderlayMTU(t *testing.T) {
	h := newNamespace(t)
	other, _ := h.LinkByName("other")
	if err := h.LinkSetMTU(other, 1400); err != nil {
		t.Fatal(err)
	}
	if mtu, err := devroute.UnderlayMTU(h, netip.MustParseAddr("192.0.2.1")); err != nil || mtu != 1400 {
		t.Errorf("UnderlayMTU = %d, %v; want 1400", mtu, err)
	}
	if _, err := devroute.UnderlayMTU(h, netip.MustParseAddr("192.0.2.99")); err == nil {
		t.Error("an address no link holds was accepted")
	}
}

func TestOwnedSource(t *testing.T) {
	h := newNamespace(t)
	for ip, want := range map[string]string{"192.0.2.1": "192.0.2.1", "192.0.2.99": "invalid IP"} {
		got, err := devroute.OwnedSource(h, netip.MustParseAddr(ip))
		if err != nil || got.String() != want {
			t.Errorf("OwnedSource(%s) = %s, %v; want %s", ip, got, err, want)
		}
	}
}

func sameRoutes(a, b []devroute.Route) bool {
	key := func(r devroute.Route) string { return fmt.Sprint(r.Dst, " ", r.Gw, " ", r.MTU) }
	ka, kb := []string{}, []string{}
	for _, r := range a {
		ka = append(ka, key(r))
	}
	for _, r := range b {
		kb = append(kb, key(r))
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

func ipnet(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}
