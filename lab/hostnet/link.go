package hostnet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	labnetns "github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/topology"
)

// Ensure makes the host's link into the lab as hl says, level-triggered: the veth (made
// afresh when only a half of a pair is left), both ends' addresses, both ends up, a route
// for each of hl.Routes via the peer from the host's end, and no other route on the link.
func Ensure(hl topology.HostLink) error {
	peerNS, err := netns.GetFromPath(labnetns.Path(hl.PeerNamespace))
	if err != nil {
		return fmt.Errorf("namespace %s: %w", hl.PeerNamespace, err)
	}
	defer peerNS.Close()
	peer, err := netlink.NewHandleAt(peerNS)
	if err != nil {
		return fmt.Errorf("netlink in %s: %w", hl.PeerNamespace, err)
	}
	defer peer.Close()
	link, err := netlink.LinkByName(hl.Name)
	if err != nil {
		if !isNotFound(err) {
			return err
		}
		// A half-made pair from a crash: the peer may linger.
		if old, err := peer.LinkByName(hl.Peer); err == nil {
			_ = peer.LinkDel(old)
		}
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: hl.Name}, PeerName: hl.Peer, PeerNamespace: netlink.NsFd(int(peerNS))}
		if err := netlink.LinkAdd(v); err != nil {
			return fmt.Errorf("host link %s: %w", hl.Name, err)
		}
		if link, err = netlink.LinkByName(hl.Name); err != nil {
			return err
		}
	}
	peerLink, err := peer.LinkByName(hl.Peer)
	if err != nil {
		return fmt.Errorf("%s in %s: %w", hl.Peer, hl.PeerNamespace, err)
	}
	errs := []error{
		netlink.AddrReplace(link, addr(hl.Addr)),
		peer.AddrReplace(peerLink, addr(hl.PeerAddr)),
	}
	if hl.Addr6.IsValid() {
		// No duplicate address detection: the link is the lab's alone, and a tentative
		// address would not send for a second or two.
		a6, p6 := addr(hl.Addr6), addr(hl.PeerAddr6)
		a6.Flags, p6.Flags = unix.IFA_F_NODAD, unix.IFA_F_NODAD
		errs = append(errs, netlink.AddrReplace(link, a6), peer.AddrReplace(peerLink, p6))
	}
	errs = append(errs, netlink.LinkSetUp(link), peer.LinkSetUp(peerLink))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("host link %s: %w", hl.Name, err)
	}
	return syncRoutes(link, hl)
}

// syncRoutes replaces the wanted routes on the link and deletes every other route there
// but the kernel's own (the link's subnet).
func syncRoutes(link netlink.Link, hl topology.HostLink) error {
	want := map[netip.Prefix]bool{}
	var errs []error
	for _, p := range hl.Routes {
		want[p] = true
		gw, src := hl.PeerAddr.Addr(), hl.Addr.Addr()
		if p.Addr().Is6() {
			if !hl.PeerAddr6.IsValid() {
				errs = append(errs, fmt.Errorf("host route %s: the link has no IPv6 address", p))
				continue
			}
			gw, src = hl.PeerAddr6.Addr(), hl.Addr6.Addr()
		}
		r := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: ipNet(p),
			Gw: net.IP(gw.AsSlice()), Src: net.IP(src.AsSlice())}
		if err := netlink.RouteReplace(r); err != nil {
			errs = append(errs, fmt.Errorf("host route %s via %s: %w", p, gw, err))
		}
	}
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		have, err := netlink.RouteList(link, family)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		for _, r := range have {
			// The kernel's own: the link's subnets, and in IPv6 fe80::/64 and the
			// multicast route.
			if r.Protocol == unix.RTPROT_KERNEL || r.Dst == nil || r.Dst.IP.IsLinkLocalUnicast() || r.Dst.IP.IsMulticast() {
				continue
			}
			ones, _ := r.Dst.Mask.Size()
			a, _ := netip.AddrFromSlice(r.Dst.IP)
			if !want[netip.PrefixFrom(a.Unmap(), ones)] {
				errs = append(errs, netlink.RouteDel(&r))
			}
		}
	}
	return errors.Join(errs...)
}

// Remove deletes the host's link into the lab, and with it every route on it. A link
// that is not there is no error: "lab down" needs no state.
func Remove(name string) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return err
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("deleting host link %s: %w", name, err)
	}
	return nil
}

// Exists says whether the host has a link of that name.
func Exists(name string) bool {
	_, err := netlink.LinkByName(name)
	return err == nil
}

func isNotFound(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.As(err, &nf)
}

func addr(p netip.Prefix) *netlink.Addr { return &netlink.Addr{IPNet: ipNet(p)} }

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
