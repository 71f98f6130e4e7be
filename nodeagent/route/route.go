package route

import (
	"net"
	"net/netip"
	"slices"

	"github.com/straitnet/strait/nodeagent/kernel"
)

// What is ours on every node.
const (
	// VXLANDevice carries pod traffic from nodes to the active gateway.
	VXLANDevice = "vx-strait"
	// VNI and Port of vx-strait: Submariner's vx-submariner uses 100 and 4800, the vxlan
	// cable 4803 between gateways.
	VNI  = 4242
	Port = 4804
	// Table is Strait's routing table, looked up by a rule at RulePriority.
	Table        = 4242
	RulePriority = 4242
	// Protocol marks every route the route agent adds (ip route ... proto 242).
	Protocol = 242
	// CableProtocol marks the routes a cable driver adds through its own device (in
	// Table too). A separate number keeps the route agent's prune and the driver's
	// prune from removing each other's routes; both are ours for --cleanup.
	CableProtocol = 243
	// NFTable is Strait's nftables table: table ip strait, and table ip6 strait on a node
	// that routes IPv6.
	NFTable = "strait"
	// VXLANOverhead is what VXLAN over IPv4 adds to a packet.
	VXLANOverhead = 50
	// VXLAN6Overhead is what VXLAN over IPv6 adds: the outer header is 20 bytes longer.
	VXLAN6Overhead = 70
	// MSSChain is the chain that clamps TCP MSS for remote traffic.
	MSSChain = "mss-clamp"
	// RemoteSet holds every remote CIDR.
	RemoteSet = "remote-cidrs"
	// SourceChain keeps every masquerade on the node (the CNI's, kube-proxy's, in
	// whatever table) off remote clusters' traffic: see nftState.
	SourceChain = "keep-remote-source"
	// SourceChainPriority runs SourceChain before the srcnat NAT chains (100) of
	// iptables' nat table, kube-proxy and the CNIs, and after globalnet's egress SNAT
	// (globalnet.EgressPriority), whose translation must win over it.
	SourceChainPriority = 90
)

// Ownership is everything the agent may create, change and remove on a node.
func Ownership() kernel.Ownership {
	return kernel.Ownership{LinkNames: []string{VXLANDevice}, Table: Table, Protocol: Protocol,
		RulePriority: RulePriority, NFTable: NFTable}
}

// Node is a node of the cluster as the route agent needs it.
type Node struct {
	Name string
	// IP is the node's underlay (InternalIP) address: IPv4, or IPv6 on a node that has
	// only an IPv6 one.
	IP netip.Addr
}

// Input is everything the route agent's state depends on.
type Input struct {
	// Self is this node.
	Self Node
	// Nodes are all nodes of the cluster (Self included).
	Nodes []Node
	// Gateway is the active gateway; the zero Node when there is none.
	Gateway Node
	// Underlay is the device holding Self.IP and its MTU.
	Underlay    string
	UnderlayMTU int
	// CableOverhead is what the cable between gateways adds to a packet.
	CableOverhead int
	// RemoteCIDRs are the CIDRs of every Peer, of both families.
	RemoteCIDRs []netip.Prefix
}

// VTEP is a node's IPv4 address on vx-strait: 241.x.y.z from the low three bytes of its
// underlay IPv4 address (as Submariner derives 240.x.y.z). A node whose underlay is
// IPv6 has none.
func VTEP(node netip.Addr) netip.Addr {
	b := low4(node)
	return netip.AddrFrom4([4]byte{241, b[1], b[2], b[3]})
}

// VTEP6Prefix holds every node's IPv6 address on vx-strait. It is a unique local prefix
// (RFC 4193) whose global ID spells "Strai" (53 74 72 61 69), not a random one: ULA
// prefixes are meant to be picked at random (40 bits), and the ones people pick by hand
// (fd00::/16 and its neighbours, kind's fd00:10::/32, documentation examples) lie
// elsewhere, so a cluster's own ranges do not meet it in practice; and it is on-link on
// vx-strait only, as 241.0.0.0/8 is for IPv4.
var VTEP6Prefix = netip.MustParsePrefix("fd53:7472:6169::/96")

// VTEP6 is a node's IPv6 address on vx-strait: VTEP6Prefix and the four low bytes of its
// underlay address (IPv4 or IPv6), the bytes its MAC is derived from.
func VTEP6(node netip.Addr) netip.Addr {
	a := VTEP6Prefix.Addr().As16()
	b := low4(node)
	copy(a[12:], b[:])
	return netip.AddrFrom16(a)
}

// low4 are the four low bytes of an underlay address: all of an IPv4 one.
func low4(a netip.Addr) [4]byte {
	if a.Is4() || a.Is4In6() {
		return a.Unmap().As4()
	}
	b := a.As16()
	return [4]byte(b[12:])
}

// VTEPMAC is a node's hardware address on vx-strait: 0a:73 (locally administered,
// unicast) and the four low bytes of its underlay address (all four of an IPv4 one).
// Derived rather than random, it stays the
// same when the device is made again (an agent upgrade that changes the device, a
// reboot), and every node can write a permanent neighbor entry for the active
// gateway's VTEP without asking. With the kernel's random MAC, a gateway whose device
// had been remade since a node last resolved it got that node's packets for the old MAC
// after a failover, and dropped them until the node's neighbor entry went through
// DELAY and PROBE (5 s + 3 s, or longer: 9.5-25 s measured in the lab).
func VTEPMAC(node netip.Addr) string {
	b := low4(node)
	return net.HardwareAddr{0x0a, 0x73, b[0], b[1], b[2], b[3]}.String()
}

// RouteMTU is the MTU of a route to a remote CIDR: the underlay minus the larger of the
// VXLAN leg to the gateway (over an IPv4 underlay) and the cable.
func RouteMTU(underlayMTU, cableOverhead int, onGateway bool) int {
	return routeMTU(underlayMTU, VXLANOverhead, cableOverhead, onGateway)
}

// VXLANOverheadOver is what vx-strait adds to a packet over the underlay address's
// family, whatever the inner packet's.
func VXLANOverheadOver(underlay netip.Addr) int {
	if underlay.Is6() && !underlay.Is4In6() {
		return VXLAN6Overhead
	}
	return VXLANOverhead
}

func routeMTU(underlayMTU, vxlanOverhead, cableOverhead int, onGateway bool) int {
	o := max(cableOverhead, vxlanOverhead)
	if onGateway {
		o = cableOverhead
	}
	return underlayMTU - o
}

// Compute is the route agent's desired state on Input.Self. With no active gateway or
// no remote CIDR there is nothing to do; on the active gateway itself vx-strait only
// receives (the gateway package routes remote CIDRs into the cable).
//
// vx-strait is L2: over the node's underlay, IPv4 or IPv6, it carries both inner
// families. Each family with remote CIDRs gets its VTEP address, the gateway's VTEP as a
// permanent neighbor, routes, a policy rule and its nftables table; a family without
// any gets none of them, so an IPv4-only cluster's nodes look as they did before IPv6.
// A node whose underlay is IPv6 has no IPv4 VTEP (241.x.y.z is derived from IPv4 bytes)
// and routes no IPv4: an IPv6-only cluster has no IPv4 pods.
func Compute(in Input) kernel.State {
	remote := canonical(in.RemoteCIDRs)
	if !in.Gateway.IP.IsValid() || len(remote) == 0 || !in.Self.IP.IsValid() {
		return kernel.State{}
	}
	under6 := kernel.FamilyOf(in.Self.IP) == kernel.IPv6
	var v4, v6 []netip.Prefix
	for _, p := range remote {
		if p.Addr().Is4() {
			if !under6 {
				v4 = append(v4, p)
			}
		} else {
			v6 = append(v6, p)
		}
	}
	if len(v4)+len(v6) == 0 {
		return kernel.State{}
	}
	onGateway := in.Self.Name == in.Gateway.Name
	vxlanOverhead := VXLANOverheadOver(in.Self.IP)
	vx := kernel.Link{Name: VXLANDevice, Kind: "vxlan", MTU: in.UnderlayMTU - vxlanOverhead, Up: true,
		VXLAN: &kernel.VXLAN{VNI: VNI, Port: Port, Local: in.Self.IP, Parent: in.Underlay}, MAC: VTEPMAC(in.Self.IP)}
	st := kernel.State{Sysctls: map[string]string{}}
	if len(v4) > 0 {
		vx.Addrs = append(vx.Addrs, netip.PrefixFrom(VTEP(in.Self.IP), 8))
		st.Rules = append(st.Rules, kernel.Rule{Priority: RulePriority, Table: Table})
		st.Sysctls["net/ipv4/conf/"+VXLANDevice+"/rp_filter"] = "2"
		st.NFT = nftState(kernel.IPv4, v4)
	}
	if len(v6) > 0 {
		vx.Addrs = append(vx.Addrs, netip.PrefixFrom(VTEP6(in.Self.IP), VTEP6Prefix.Bits()))
		st.Rules = append(st.Rules, kernel.Rule{Priority: RulePriority, Table: Table, Family: kernel.IPv6})
		// A host that disables IPv6 on new devices would refuse the VTEP's address.
		st.Sysctls["net/ipv6/conf/"+VXLANDevice+"/disable_ipv6"] = "0"
		st.NFT6 = nftState(kernel.IPv6, v6)
	}
	if onGateway {
		// Every other node may send here; FDB entries let ARP and NDP replies go back.
		for _, n := range in.Nodes {
			if n.Name != in.Self.Name && n.IP.IsValid() && kernel.FamilyOf(n.IP) == kernel.FamilyOf(in.Self.IP) {
				vx.FDB = append(vx.FDB, n.IP)
			}
		}
		slices.SortFunc(vx.FDB, func(a, b netip.Addr) int { return a.Compare(b) })
	} else {
		vx.FDB = []netip.Addr{in.Gateway.IP}
		mtu := routeMTU(in.UnderlayMTU, vxlanOverhead, in.CableOverhead, false)
		// The gateway's MAC is known: no ARP or neighbor discovery before the first
		// packet after a failover.
		mac := VTEPMAC(in.Gateway.IP)
		if len(v4) > 0 {
			vx.Neighbors = append(vx.Neighbors, kernel.Neighbor{IP: VTEP(in.Gateway.IP), MAC: mac})
			// Replies from remote clusters come back from the gateway through the cluster
			// network while the route back to their source is vx-strait: loose on the
			// underlay too (the one setting on a device that is not ours; never
			// reverted, as loosening cannot break traffic). IPv6 has no rp_filter.
			if in.Underlay != "" {
				st.Sysctls["net/ipv4/conf/"+in.Underlay+"/rp_filter"] = "2"
			}
		}
		if len(v6) > 0 {
			vx.Neighbors = append(vx.Neighbors, kernel.Neighbor{IP: VTEP6(in.Gateway.IP), MAC: mac})
		}
		for _, p := range v4 {
			st.Routes = append(st.Routes, kernel.Route{Table: Table, Dst: p, Dev: VXLANDevice,
				Gw: VTEP(in.Gateway.IP), Onlink: true, MTU: mtu})
		}
		for _, p := range v6 {
			st.Routes = append(st.Routes, kernel.Route{Table: Table, Dst: p, Dev: VXLANDevice,
				Gw: VTEP6(in.Gateway.IP), Onlink: true, MTU: mtu})
		}
	}
	st.Links = []kernel.Link{vx}
	return st
}

// nftState is the nftables part: the remote CIDRs, the MSS clamp for SYNs towards
// them, and the addresses of remote clusters' connections kept.
//
// A connection between clusters must keep both its addresses on every node it crosses:
// a masquerade anywhere on the way swaps the caller's pod IP for a node address the
// other cluster cannot route back to (or, through a ClusterIP, hides the caller). Nodes
// masquerade for several owners, none of them Strait: kube-proxy marks a remote pod's
// connection to a ClusterIP for masquerade (its source lies outside the cluster CIDR);
// kindnet, the bridge plugin's ipMasq and flannel's --ip-masq masquerade pod traffic to
// anything outside the cluster's pod CIDR, flannel also traffic from outside it to pods
// on other nodes; in iptables' nat table (legacy or nft) or in tables of their own, and
// they rewrite those rules whenever they resync.
//
// Netfilter makes one source NAT decision per connection: the NAT chains of the
// postrouting hook, from every table and framework, run in priority order on the
// connection's first packet, and the first that binds a mapping ends the walk
// (nf_nat_inet_fn); a plain accept does not, so Submariner's ACCEPT at the head of
// iptables' POSTROUTING keeps only iptables' masquerade away. SourceChain is a NAT chain
// at SourceChainPriority, ahead of every srcnat chain, that binds the identity mapping
// (snat to the packet's own source) for connections to and from the remote CIDRs: no
// later masquerade sees them, whoever owns it, and nothing of theirs is edited, so
// their resyncs cannot undo it and removing Strait's table restores them as they were.
// The reply of a connection to a ClusterIP still comes back through the gateway (the
// remote CIDRs are routed there), where conntrack undoes the DNAT.
//
// Table ip6 strait holds the same for IPv6: the set of type ipv6_addr, the matches on the
// IPv6 header and the identity mapping as a NAT of family ip6.
func nftState(f kernel.Family, remote []netip.Prefix) *kernel.NFTable {
	key, snat := "ipv4_addr", "snat to ip saddr"
	if f == kernel.IPv6 {
		key, snat = "ipv6_addr", "snat ip6 to ip6 saddr"
	}
	fam := string(f)
	clamp := kernel.NFTRule{Text: fam + " daddr @" + RemoteSet + " tcp flags syn tcp option maxseg size set rt mtu"}
	clamp.Exprs = append(clamp.Exprs, kernel.DaddrInSetOf(f, RemoteSet)...)
	clamp.Exprs = append(clamp.Exprs, kernel.TCPSyn()...)
	clamp.Exprs = append(clamp.Exprs, kernel.ClampMSSToRoute()...)
	to := kernel.NFTRule{Text: fam + " daddr @" + RemoteSet + " " + snat}
	to.Exprs = append(to.Exprs, kernel.DaddrInSetOf(f, RemoteSet)...)
	to.Exprs = append(to.Exprs, kernel.SNATToSaddrOf(f)...)
	from := kernel.NFTRule{Text: fam + " saddr @" + RemoteSet + " " + snat}
	from.Exprs = append(from.Exprs, kernel.SaddrInSetOf(f, RemoteSet)...)
	from.Exprs = append(from.Exprs, kernel.SNATToSaddrOf(f)...)
	return &kernel.NFTable{Name: NFTable, Family: f,
		Sets: []kernel.NFTSet{{Name: RemoteSet, Key: key, Interval: true, Elements: kernel.IntervalElementsOf(f, remote)}},
		Chains: []kernel.NFTChain{
			{Name: MSSChain, Type: "filter", Hook: "forward", Priority: -150, Rules: []kernel.NFTRule{clamp}},
			{Name: SourceChain, Type: "nat", Hook: "postrouting", Priority: SourceChainPriority, Rules: []kernel.NFTRule{to, from}},
		}}
}

// canonical sorts (IPv4 first), masks and de-duplicates prefixes of both families; an
// IPv4-mapped IPv6 prefix counts as none.
func canonical(in []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range in {
		if p.IsValid() && !p.Addr().Is4In6() {
			out = append(out, p.Masked())
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}

// Canonical is canonical for other packages.
func Canonical(in []netip.Prefix) []netip.Prefix { return canonical(in) }
