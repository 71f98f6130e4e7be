package gateway

import (
	"net/netip"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
)

// Router is implemented by cable drivers whose traffic the gateway routes into a device:
// the route to every CIDR of r goes to Dev (via Gw when valid, on-link). Drivers that
// route themselves (strongSwan installs its own routes) do not implement it.
type Router interface {
	Route(r cable.Remote) (dev string, gw netip.Addr)
}

// FamilyRouter is implemented by Routers whose next hop depends on the destination's
// family: a device reached through a VTEP has one next hop per family. A Router that
// does not implement it gives one next hop for both, and a destination of the other
// family than that next hop gets no route (the kernel has none to give it).
type FamilyRouter interface {
	RouteFamily(r cable.Remote, f kernel.Family) (dev string, gw netip.Addr)
}

// Overheader is implemented by drivers that know their per-packet overhead.
type Overheader interface {
	Overhead() int
}

// FamilyOverheader is implemented by drivers whose overhead depends on the underlay's
// family (the outer header's).
type FamilyOverheader interface {
	Overheads() cable.Overheads
}

// Overhead of a driver: its own word, else the usual figure for its kind, whatever the
// underlay's family (WireGuard's is IPv6's, IPsec's IPv4's, as before IPv6); see
// UnderlayOverhead for the figure of one family.
func Overhead(d cable.Driver) int {
	if o, ok := d.(Overheader); ok {
		return o.Overhead()
	}
	return DriverOverhead(d.Name())
}

// UnderlayOverhead is a driver's overhead over an underlay of local's family (the
// gateway's cable.Local.IP): WireGuard adds 60 bytes over IPv4 and 80 over IPv6. A
// driver that does not tell the families apart gives Overhead.
func UnderlayOverhead(d cable.Driver, local netip.Addr) int {
	if o, ok := d.(FamilyOverheader); ok && local.IsValid() {
		return o.Overheads().For(local)
	}
	return Overhead(d)
}

// DriverOverhead is the usual IPv4 overhead of a kind of cable.
func DriverOverhead(name straitv1.CableDriver) int {
	switch name {
	case straitv1.CableWireGuard:
		return 80 // outer IPv4/IPv6 + UDP + WireGuard header and tag, rounded as wg-quick does
	case straitv1.CableIPsec:
		return 100 // UDP-encapsulated ESP with padding and ICV
	case straitv1.CableVXLAN:
		return route.VXLANOverhead
	}
	return 0
}

// Routes are the active gateway's routes to every remote's CIDRs through the cable, in
// Strait's table with the given MTU, IPv4 and IPv6 alike (a route's family is its
// Dst's; the MTU depends on the underlay's family, not the route's); none when the
// driver is not a Router.
func Routes(d cable.Driver, remotes []cable.Remote, mtu int) []kernel.Route {
	rt, ok := d.(Router)
	if !ok {
		return nil
	}
	fr, perFamily := d.(FamilyRouter)
	var out []kernel.Route
	for _, r := range remotes {
		dev, gw := rt.Route(r)
		for _, p := range route.Canonical(r.CIDRs) {
			dev, gw := dev, gw
			f := kernel.FamilyOf(p.Addr())
			if perFamily {
				dev, gw = fr.RouteFamily(r, f)
			}
			if gw.IsValid() && kernel.FamilyOf(gw) != f {
				continue
			}
			out = append(out, kernel.Route{Table: route.Table, Dst: p, Dev: dev, Gw: gw, Onlink: gw.IsValid(), MTU: mtu})
		}
	}
	return out
}
