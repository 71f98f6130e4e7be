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
	if err := errors.Join(
		netlink.AddrReplace(link, addr(hl.Addr)),
		peer.AddrReplace(peerLink, addr(hl.PeerAddr)),
		netlink.LinkSetUp(link),
		peer.LinkSetUp(peerLink),
	); err != nil {
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
		r := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: ipNet(p),
			Gw: net.IP(hl.PeerAddr.Addr().AsSlice()), Src: net.IP(hl.Addr.Addr().AsSlice())}
		if err := netlink.RouteReplace(r); err != nil {
			errs = append(errs, fmt.Errorf("host route %s via %s: %w", p, hl.PeerAddr.Addr(), err))
		}
	}
	have, err := netlink.RouteList(link, netlink.FAMILY_V4)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, r := range have {
		if r.Protocol == unix.RTPROT_KERNEL || r.Dst == nil {
			continue
		}
		ones, _ := r.Dst.Mask.Size()
		a, _ := netip.AddrFromSlice(r.Dst.IP.To4())
		if !want[netip.PrefixFrom(a, ones)] {
			errs = append(errs, netlink.RouteDel(&r))
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
