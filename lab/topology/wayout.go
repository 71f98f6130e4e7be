package topology

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Names of the way out.
const (
	// InternetNamespace stands for the internet: on the WAN, the routers' default gateway.
	InternetNamespace = Prefix + "internet"
	// HostLinkName is the lab's one link in the host's namespace; its peer, HostLinkPeer,
	// is in InternetNamespace.
	HostLinkName = Prefix + "lab"
	HostLinkPeer = Prefix + "host"
	// RouterTable is the nftables table (family ip) of a router's NAT, in the router's
	// namespace (Router.NATRuleset): only a router whose gateways are behind NAT has it.
	RouterTable = "lab-router"
	// InternetTable is the nftables table (family inet) of the internet namespace: its
	// fence (Internet.FenceRuleset).
	InternetTable = "lab-internet"
	// EchoPort is where the internet namespace answers HTTP with the caller's address.
	EchoPort = 80
)

var (
	defaultRoute  = netip.MustParsePrefix("0.0.0.0/0")
	defaultRoute6 = netip.MustParsePrefix("::/0")
)

// Router is a member cluster's way out: a namespace between its LAN and the WAN, the
// default gateway of its nodes and control plane, as a real site's router is. It routes
// between LAN and WAN and translates nothing but its gateways' addresses when the
// cluster's gateways are behind it (GatewayNAT).
type Router struct {
	Namespace string
	// LANAddr (the LAN's first address) is the nodes' default gateway.
	LANAddr netip.Prefix
	WANAddr netip.Prefix
	// LANAddr6 and WANAddr6 are their IPv6 twins in a dual-stack lab.
	LANAddr6 netip.Prefix
	WANAddr6 netip.Prefix
	// Routes: the default route to the internet; the cluster's node pod CIDRs via their
	// nodes and its service CIDR via the first node (as the control plane's); the hub's
	// address and CIDRs via the hub's leg on this LAN.
	Routes []Route
	// GatewayNAT is the cluster's ClusterShape.GatewayNAT; Gateways the gateway nodes it
	// translates, in node order (none when GatewayNAT is empty).
	GatewayNAT string
	Gateways   []GatewayMapping
}

// Internet stands for the internet: a namespace on the WAN whose loopback holds Addr,
// outside every range of the clusters, the WAN and the LANs. Pods and nodes reach it
// through their router; the lab daemon answers HTTP on Addr:EchoPort with the caller's
// address as it arrives (whereami's JSON, "caller"), so a test sees what NAT did on the
// way. The host's link into the lab ends here too.
type Internet struct {
	Namespace string
	Addr      netip.Addr
	// WANAddr (the WAN's first address) is every router's default gateway.
	WANAddr netip.Prefix
	// Addr6 and WANAddr6 are their IPv6 twins in a dual-stack lab.
	Addr6    netip.Addr
	WANAddr6 netip.Prefix
	// Routes lead back into the clusters through their routers: every LAN, and every
	// pod and service CIDR no other member shares (overlapping ones have no way back
	// without NAT); the hub's address and CIDRs through the first member's router.
	Routes []Route
	// Fenced are the members' pod and service CIDRs among Routes: the internet forwards
	// to them only what comes from the host's link (FenceRuleset), so traffic between
	// clusters that misses Strait's cables is dropped instead of arriving anyway.
	Fenced []netip.Prefix
}

// FenceRuleset is the nft script of the internet's table InternetTable, empty when
// nothing is fenced. It replaces the table whole, so it can be applied again. A packet
// forwarded to a fenced range is dropped unless it came in on the host's link: the host
// keeps its way to every pod and ClusterIP (and their answers come back, addressed to
// the host's link), a pod of one member reaches another member's pods and Services only
// through Strait, as between real sites whose private ranges the internet does not
// route.
func (in Internet) FenceRuleset() string {
	var v4, v6 []string
	for _, p := range in.Fenced {
		if p.Addr().Is4() {
			v4 = append(v4, p.String())
		} else {
			v6 = append(v6, p.String())
		}
	}
	if len(v4)+len(v6) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "add table inet %[1]s\ndelete table inet %[1]s\ntable inet %[1]s {\n", InternetTable)
	b.WriteString("\tchain forward {\n\t\ttype filter hook forward priority filter; policy accept;\n")
	for _, f := range []struct {
		family string
		ranges []string
	}{{"ip", v4}, {"ip6", v6}} {
		if len(f.ranges) > 0 {
			fmt.Fprintf(&b, "\t\tiifname != %q %s daddr { %s } drop\n", HostLinkPeer, f.family, strings.Join(f.ranges, ", "))
		}
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// HostLink is the veth from the host's namespace to the internet namespace, with routes
// on the host for exactly the lab's ranges, so no client on the host given a lab
// address ever sends it out through the host's default route.
type HostLink struct {
	// Name, holding Addr, is in the host's namespace; Peer, holding PeerAddr, in
	// PeerNamespace.
	Name          string
	Addr          netip.Prefix
	PeerNamespace string
	Peer          string
	PeerAddr      netip.Prefix
	// Addr6 and PeerAddr6 are the link's IPv6 addresses in a dual-stack lab (the
	// internet range's ::fd and ::fe, a /126).
	Addr6     netip.Prefix
	PeerAddr6 netip.Prefix
	// Routes are the lab's ranges, via PeerAddr from Addr: the LAN range, the WAN, the
	// internet range, every IPv4 pod and service CIDR of the ClusterSet and, with
	// globalnet, the global range and pinned global CIDRs. Never a default route, and
	// never more than those: the host's other traffic keeps its way. In a dual-stack lab
	// also the lab's IPv6 range, via PeerAddr6.
	Routes []netip.Prefix
}

// wireWayOut adds each member's router, the internet namespace and the host's link,
// and gives the members' nodes and control planes, and the hub, their default routes.
func (l *Lab) wireWayOut(cs []netip.Prefix) {
	if len(l.Clusters) == 0 {
		return
	}
	in := &Internet{Namespace: InternetNamespace, Addr: nthAddr(l.InternetRange.Addr(), 1),
		WANAddr: netip.PrefixFrom(nthAddr(l.WANSubnet.Addr(), 1), l.WANSubnet.Bits())}
	// The WAN is a /24 or larger; only its first 256 addresses are used, every one with
	// the WAN's own mask.
	in.WANAddr6 = l.wanTwin(in.WANAddr)
	if l.IPv6Range.IsValid() {
		in.Addr6 = nthAddr6(internet6(l.IPv6Range).Addr(), 1)
	}
	l.Links = append(l.Links, Link{Namespace: in.Namespace, Name: NodeWANLink, Addr: in.WANAddr, Addr6: in.WANAddr6,
		PeerNamespace: WANNamespace, Peer: Prefix + "inet", PeerBridge: true})
	shared := sharedRanges(l.Clusters)
	for i := range l.Clusters {
		c := &l.Clusters[i]
		r := &c.Router
		r.Routes = append(r.Routes, Route{Dst: defaultRoute, Via: in.WANAddr.Addr()})
		r.Routes = appendRoute6(r.Routes, defaultRoute6, in.WANAddr6)
		r.Routes = append(r.Routes, c.ControlPlane.Routes...) // pod CIDRs, service CIDR, hub pods
		c.ControlPlane.Routes = append(c.ControlPlane.Routes, Route{Dst: defaultRoute, Via: r.LANAddr.Addr()})
		c.ControlPlane.Routes = appendRoute6(c.ControlPlane.Routes, defaultRoute6, r.LANAddr6)
		for j := range c.Nodes {
			c.Nodes[j].Routes = append(c.Nodes[j].Routes, Route{Dst: defaultRoute, Via: r.LANAddr.Addr()})
			c.Nodes[j].Routes = appendRoute6(c.Nodes[j].Routes, defaultRoute6, r.LANAddr6)
		}
		// The lab's IPv6 ranges are its own: no two members share one.
		for _, p := range []netip.Prefix{c.LANSubnet6, c.PodCIDR6, c.ServiceCIDR6} {
			in.Routes = appendRoute6(in.Routes, p, r.WANAddr6)
		}
		for _, p := range []netip.Prefix{c.PodCIDR6, c.ServiceCIDR6} {
			if p.IsValid() && r.WANAddr6.IsValid() {
				in.Fenced = append(in.Fenced, p)
			}
		}
		via := r.WANAddr.Addr()
		in.Routes = append(in.Routes, Route{Dst: c.LANSubnet, Via: via})
		for _, p := range []netip.Prefix{c.PodCIDR, c.ServiceCIDR} {
			if p.IsValid() && !shared[p] {
				in.Routes = append(in.Routes, Route{Dst: p, Via: via})
				in.Fenced = append(in.Fenced, p)
			}
		}
		if l.Hub != nil {
			r.Routes = append(r.Routes,
				Route{Dst: l.Hub.LANAddr, Via: c.HubAddr.Addr()},
				Route{Dst: l.HubServiceCIDR, Via: c.HubAddr.Addr()})
		}
	}
	if l.Hub != nil {
		first := l.Clusters[0]
		l.Hub.Routes = append(l.Hub.Routes, Route{Dst: defaultRoute, Via: first.Router.LANAddr.Addr()})
		for _, p := range []netip.Prefix{l.Hub.LANAddr, l.HubPodCIDR, l.HubServiceCIDR} {
			in.Routes = append(in.Routes, Route{Dst: p, Via: first.Router.WANAddr.Addr()})
		}
	}
	l.Internet = in
	// The host's link is the internet range's last /30 but one: .253 on the host, .254
	// in the internet namespace.
	base := nthAddr(l.InternetRange.Addr(), 252)
	ranges := append([]netip.Prefix{l.LANRange, l.WANSubnet, l.InternetRange}, cs...)
	l.HostLink = &HostLink{Name: HostLinkName, Addr: netip.PrefixFrom(nthAddr(base, 1), 30),
		PeerNamespace: in.Namespace, Peer: HostLinkPeer, PeerAddr: netip.PrefixFrom(nthAddr(base, 2), 30)}
	if l.IPv6Range.IsValid() {
		base6 := nthAddr6(internet6(l.IPv6Range).Addr(), 252)
		l.HostLink.Addr6 = netip.PrefixFrom(nthAddr6(base6, 1), 126)
		l.HostLink.PeerAddr6 = netip.PrefixFrom(nthAddr6(base6, 2), 126)
		ranges = append(ranges, l.IPv6Range)
	}
	l.HostLink.Routes = hostRoutes(ranges)
}

// sharedRanges are the pod and service CIDRs more than one member's ranges overlap.
func sharedRanges(cs []Cluster) map[netip.Prefix]bool {
	out := map[netip.Prefix]bool{}
	for i, a := range cs {
		for j, b := range cs {
			if i == j {
				continue
			}
			for _, p := range []netip.Prefix{a.PodCIDR, a.ServiceCIDR} {
				if p.Overlaps(b.PodCIDR) || p.Overlaps(b.ServiceCIDR) {
					out[p] = true
				}
			}
		}
	}
	return out
}

// hostRoutes sorts ranges and drops every one another of them holds.
func hostRoutes(ranges []netip.Prefix) []netip.Prefix {
	slices.SortFunc(ranges, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	var out []netip.Prefix
	for _, p := range ranges {
		if n := len(out); n > 0 && out[n-1].Bits() <= p.Bits() && out[n-1].Contains(p.Addr()) {
			continue
		}
		out = append(out, p)
	}
	return out
}
