package hostnet

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/straitnet/strait/lab/topology"
)

// ResolvConf is where the host's resolvers are read from.
const ResolvConf = "/etc/resolv.conf"

// Ranges lists the host's IPv4 and IPv6 routes of every table (local and broadcast
// routes are its addresses again, and left out; so are IPv6's link-local and multicast
// routes, which every link has), its addresses and its resolvers, leaving out the link
// named skip (the lab's own) and what is on it.
func Ranges(skip string) ([]topology.HostRange, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing the host's links: %w", err)
	}
	names := map[int]string{}
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	routes, err := netlink.RouteListFiltered(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("listing the host's routes: %w", err)
	}
	var out []topology.HostRange
	for _, r := range routes {
		dev := names[r.LinkIndex]
		if dev == skip && skip != "" {
			continue
		}
		switch r.Type {
		case unix.RTN_LOCAL, unix.RTN_BROADCAST, unix.RTN_ANYCAST, unix.RTN_MULTICAST:
			continue
		}
		dst := netip.MustParsePrefix("0.0.0.0/0")
		if r.Family == netlink.FAMILY_V6 {
			dst = netip.MustParsePrefix("::/0")
		}
		if r.Dst != nil {
			ones, _ := r.Dst.Mask.Size()
			a, ok := netip.AddrFromSlice(r.Dst.IP)
			if !ok || r.Dst.IP.IsLinkLocalUnicast() || r.Dst.IP.IsMulticast() {
				continue
			}
			dst = netip.PrefixFrom(a.Unmap(), ones)
		}
		out = append(out, topology.HostRange{Prefix: dst, What: describeRoute(r, dst, dev)})
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("listing the host's addresses: %w", err)
	}
	for _, a := range addrs {
		dev := names[a.LinkIndex]
		if dev == skip && skip != "" {
			continue
		}
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok || a.IP.IsLinkLocalUnicast() {
			continue
		}
		ip = ip.Unmap()
		ones, _ := a.Mask.Size()
		p := netip.PrefixFrom(ip, ones)
		out = append(out, topology.HostRange{Prefix: netip.PrefixFrom(ip, ip.BitLen()), What: fmt.Sprintf("address %s on %s", p, dev)})
	}
	data, err := os.ReadFile(ResolvConf)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	out = append(out, Resolvers(data, ResolvConf)...)
	return out, nil
}

// describeRoute writes a route as ip(8) would, enough to find it on the host.
func describeRoute(r netlink.Route, dst netip.Prefix, dev string) string {
	var b strings.Builder
	b.WriteString("route ")
	switch r.Type {
	case unix.RTN_BLACKHOLE:
		b.WriteString("blackhole ")
	case unix.RTN_UNREACHABLE:
		b.WriteString("unreachable ")
	case unix.RTN_PROHIBIT:
		b.WriteString("prohibit ")
	}
	b.WriteString(dst.String())
	if r.Gw != nil {
		b.WriteString(" via " + r.Gw.String())
	}
	if dev != "" {
		b.WriteString(" dev " + dev)
	}
	if r.Table != unix.RT_TABLE_MAIN {
		fmt.Fprintf(&b, " table %d", r.Table)
	}
	return b.String()
}

// Resolvers reads the nameservers of a resolv.conf (IPv6 ones without a zone): a lab range over one would
// take the host's name service into the lab.
func Resolvers(data []byte, path string) []topology.HostRange {
	var out []topology.HostRange
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		if a, err := netip.ParseAddr(f[1]); err == nil && a.Zone() == "" {
			out = append(out, topology.HostRange{Prefix: netip.PrefixFrom(a, a.BitLen()), What: fmt.Sprintf("resolver %s (%s)", a, path)})
		}
	}
	return out
}
