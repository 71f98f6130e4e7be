package devroute

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/nldump"
)

// Route is one route to a remote CIDR through a driver's device.
type Route struct {
	Dst netip.Prefix
	// Gw is the next hop on the device (a remote VTEP), or invalid for a direct route.
	Gw netip.Addr
	// Src is the preferred source address, or invalid.
	Src netip.Addr
	// MTU of the route, or 0 for the device's.
	MTU int
}

// Sync makes the routes through link in r.Table marked with r.Protocol exactly want:
// missing or different ones are replaced first, unwanted ones removed after.
func Sync(h *netlink.Handle, link netlink.Link, r cable.Routing, want []Route) error {
	have, err := List(h, link, r)
	if err != nil {
		return err
	}
	wanted := map[netip.Prefix]Route{}
	for _, w := range want {
		wanted[w.Dst.Masked()] = w
	}
	var errs []error
	for _, w := range wanted {
		if i := slices.IndexFunc(have, func(h Route) bool { return h == w }); i >= 0 {
			continue
		}
		if err := h.RouteReplace(toNetlink(link, r, w)); err != nil {
			errs = append(errs, fmt.Errorf("route %s via %s: %w", w.Dst, link.Attrs().Name, err))
		}
	}
	for _, old := range have {
		if w, ok := wanted[old.Dst]; ok && w == old {
			continue
		}
		if _, ok := wanted[old.Dst]; ok {
			continue // replaced above
		}
		if err := h.RouteDel(toNetlink(link, r, old)); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("delete route %s via %s: %w", old.Dst, link.Attrs().Name, err))
		}
	}
	return errors.Join(errs...)
}

// List returns the routes through link in r.Table marked with r.Protocol.
func List(h *netlink.Handle, link netlink.Link, r cable.Routing) ([]Route, error) {
	filter := &netlink.Route{
		LinkIndex: link.Attrs().Index,
		Table:     r.Table,
		Protocol:  netlink.RouteProtocol(r.Protocol),
	}
	var out []Route
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rs, err := nldump.Retry(func() ([]netlink.Route, error) {
			return h.RouteListFiltered(family, filter, netlink.RT_FILTER_OIF|netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
		})
		if err != nil {
			return nil, fmt.Errorf("list routes of %s in table %d: %w", link.Attrs().Name, r.Table, err)
		}
		for _, nr := range rs {
			if nr.Dst == nil {
				continue
			}
			out = append(out, fromNetlink(nr))
		}
	}
	return out, nil
}

func toNetlink(link netlink.Link, r cable.Routing, w Route) *netlink.Route {
	nr := &netlink.Route{
		LinkIndex: link.Attrs().Index,
		Dst:       prefixToIPNet(w.Dst.Masked()),
		Table:     r.Table,
		Protocol:  netlink.RouteProtocol(r.Protocol),
		Scope:     netlink.SCOPE_LINK,
	}
	if w.Gw.IsValid() {
		nr.Gw = net.IP(w.Gw.AsSlice())
		nr.Flags = int(netlink.FLAG_ONLINK)
		nr.Scope = netlink.SCOPE_UNIVERSE
	}
	if w.Src.IsValid() {
		nr.Src = net.IP(w.Src.AsSlice())
	}
	nr.MTU = w.MTU
	return nr
}

func fromNetlink(nr netlink.Route) Route {
	var out Route
	ones, _ := nr.Dst.Mask.Size()
	if a, ok := netip.AddrFromSlice(nr.Dst.IP); ok {
		out.Dst = netip.PrefixFrom(a.Unmap(), ones)
	}
	if a, ok := netip.AddrFromSlice(nr.Gw); ok {
		out.Gw = a.Unmap()
	}
	if a, ok := netip.AddrFromSlice(nr.Src); ok {
		out.Src = a.Unmap()
	}
	out.MTU = nr.MTU
	return out
}

func prefixToIPNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// UnderlayMTU is the MTU of the link that holds ip, the address tunnel traffic leaves from.
func UnderlayMTU(h *netlink.Handle, ip netip.Addr) (int, error) {
	family := netlink.FAMILY_V4
	if ip.Is6() {
		family = netlink.FAMILY_V6
	}
	addrs, err := nldump.Retry(func() ([]netlink.Addr, error) { return h.AddrList(nil, family) })
	if err != nil {
		return 0, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		if aa, ok := netip.AddrFromSlice(a.IP); ok && aa.Unmap() == ip {
			link, err := h.LinkByIndex(a.LinkIndex)
			if err != nil {
				return 0, fmt.Errorf("link of %s: %w", ip, err)
			}
			return link.Attrs().MTU, nil
		}
	}
	return 0, fmt.Errorf("no link on this node holds %s", ip)
}

// SourceFor is the source of a route to dst: src4 for an IPv4 destination, src6 for an
// IPv6 one (a route's source must be of its family).
func SourceFor(dst netip.Prefix, src4, src6 netip.Addr) netip.Addr {
	if dst.Addr().Is4() || dst.Addr().Is4In6() {
		return src4
	}
	return src6
}

// Handle returns h, or a handle in the current network namespace when h is nil.
func Handle(h *netlink.Handle) (*netlink.Handle, error) {
	if h != nil {
		return h, nil
	}
	nh, err := netlink.NewHandle()
	if err != nil {
		return nil, fmt.Errorf("netlink handle: %w", err)
	}
	return nh, nil
}

// OwnedSource is ip when a link on this node holds it, else the invalid address. Drivers
// give it as the source of their routes: traffic the gateway itself sends through the
// cable (health checks) then leaves from inside the local CIDRs, which is what the remote
// end accepts.
func OwnedSource(h *netlink.Handle, ip netip.Addr) (netip.Addr, error) {
	if !ip.IsValid() {
		return netip.Addr{}, nil
	}
	addrs, err := nldump.Retry(func() ([]netlink.Addr, error) { return h.AddrList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		return netip.Addr{}, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		if have, ok := netip.AddrFromSlice(a.IP); ok && have.Unmap() == ip.Unmap() {
			return ip.Unmap(), nil
		}
	}
	return netip.Addr{}, nil
}
