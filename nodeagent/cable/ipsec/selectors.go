package ipsec

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"

	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/nldump"
)

// selectorAddrs are the addresses the gateway must add so that it owns one inside every
// local CIDR: kernel-libipsec installs a route for each outbound policy with a source
// inside the policy's local traffic selector, and refuses the whole child SA when the
// gateway owns none there — as it does not in the service CIDRs. For each CIDR no owned
// address falls in, it is the CIDR's last address, which no one else uses (Kubernetes'
// service allocator and node pod ranges leave the IPv4 broadcast address alone).
func selectorAddrs(owned []netip.Addr, cidrs []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, c := range cidrs {
		c = c.Masked()
		if slices.ContainsFunc(owned, c.Contains) {
			continue
		}
		p := netip.PrefixFrom(kernel.LastAddr(c), c.Addr().BitLen())
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// syncSelectorAddrs makes the addresses on libipsec's TUN exactly selectorAddrs for
// cidrs (nil: none). Every address on it is the driver's: charon adds none there
// (install_virtual_ip = no). Without the TUN (kernel ESP) nothing is needed.
func (d *Driver) syncSelectorAddrs(cidrs []netip.Prefix) error {
	h := d.cfg.Netlink
	link, err := h.LinkByName(LibipsecDevice)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up %s: %w", LibipsecDevice, err)
	}
	all, err := nldump.Retry(func() ([]netlink.Addr, error) { return h.AddrList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		return fmt.Errorf("list addresses: %w", err)
	}
	var owned []netip.Addr
	have := map[netip.Prefix]netlink.Addr{}
	for _, a := range all {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok || ip.IsLinkLocalUnicast() {
			continue
		}
		ip = ip.Unmap()
		if a.LinkIndex != link.Attrs().Index {
			owned = append(owned, ip)
			continue
		}
		bits, _ := a.Mask.Size()
		have[netip.PrefixFrom(ip, bits)] = a
	}
	var want []netip.Prefix
	if cidrs != nil {
		want = selectorAddrs(owned, cidrs)
	}
	var errs []error
	for _, p := range want {
		if _, ok := have[p]; ok {
			delete(have, p)
			continue
		}
		a := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
		if err := h.AddrAdd(link, a); err != nil {
			errs = append(errs, fmt.Errorf("add %s to %s: %w", p, LibipsecDevice, err))
		}
	}
	for p, a := range have {
		if err := h.AddrDel(link, &a); err != nil {
			errs = append(errs, fmt.Errorf("remove %s from %s: %w", p, LibipsecDevice, err))
		}
	}
	return errors.Join(errs...)
}
