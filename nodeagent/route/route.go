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
	// NFTable is Strait's nftables table (family ip).
	NFTable = "strait"
	// VXLANOverhead is what VXLAN over IPv4 adds to a packet.
	VXLANOverhead = 50
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
	// IP is the node's underlay (InternalIP) address.
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
	// RemoteCIDRs are the CIDRs of every Peer.
	RemoteCIDRs []netip.Prefix
}

// VTEP is a node's address on vx-strait: 241.x.y.z from the low three bytes of its
// underlay IPv4 address (as Submariner derives 240.x.y.z).
func VTEP(node netip.Addr) netip.Addr {
	b := node.As4()
	return netip.AddrFrom4([4]byte{241, b[1], b[2], b[3]})
}

// VTEPMAC is a node's hardware address on vx-strait: 0a:73 (locally administered,
// unicast) and its four underlay IPv4 bytes. Derived rather than random, it stays the
// same when the device is made again (an agent upgrade that changes the device, a
// reboot), and every node can write a permanent neighbor entry for the active
// gateway's VTEP without asking. With the kernel's random MAC, a gateway whose device
// had been remade since a node last resolved it got that node's packets for the old MAC
// after a failover, and dropped them until the node's neighbor entry went through
// DELAY and PROBE (5 s + 3 s, or longer: 9.5-25 s measured in the lab).
func VTEPMAC(node netip.Addr) string {
	b := node.As4()
	return net.HardwareAddr{0x0a, 0x73, b[0], b[1], b[2], b[3]}.String()
}

// RouteMTU is the MTU of a route to a remote CIDR: the underlay minus the larger of the
// VXLAN leg to the gateway and the cable.
func RouteMTU(underlayMTU, cableOverhead int, onGateway bool) int {
	o := max(cableOverhead, VXLANOverhead)
	if onGateway {
		o = cableOverhead
	}
	return underlayMTU - o
}

// Compute is the route agent's desired state on Input.Self. With no active gateway or
// no remote CIDR there is nothing to do; on the active gateway itself vx-strait only
// receives (the gateway package routes remote CIDRs into the cable).
func Compute(in Input) kernel.State {
	remote := canonical(in.RemoteCIDRs)
	if !in.Gateway.IP.IsValid() || len(remote) == 0 || !in.Self.IP.Is4() {
		return kernel.State{}
	}
	onGateway := in.Self.Name == in.Gateway.Name
	vx := kernel.Link{Name: VXLANDevice, Kind: "vxlan", MTU: in.UnderlayMTU - VXLANOverhead, Up: true,
		VXLAN: &kernel.VXLAN{VNI: VNI, Port: Port, Local: in.Self.IP, Parent: in.Underlay},
		Addrs: []netip.Prefix{netip.PrefixFrom(VTEP(in.Self.IP), 8)}, MAC: VTEPMAC(in.Self.IP)}
	st := kernel.State{
		Rules:   []kernel.Rule{{Priority: RulePriority, Table: Table}},
		Sysctls: map[string]string{"net/ipv4/conf/" + VXLANDevice + "/rp_filter": "2"},
		NFT:     nftState(remote),
	}
	if onGateway {
		// Every other node may send here; FDB entries let ARP replies go back.
		for _, n := range in.Nodes {
			if n.Name != in.Self.Name && n.IP.Is4() {
				vx.FDB = append(vx.FDB, n.IP)
			}
		}
		slices.SortFunc(vx.FDB, func(a, b netip.Addr) int { return a.Compare(b) })
	} else {
		vx.FDB = []netip.Addr{in.Gateway.IP}
		// The gateway's MAC is known: no ARP before the first packet after a failover.
		vx.Neighbors = []kernel.Neighbor{{IP: VTEP(in.Gateway.IP), MAC: VTEPMAC(in.Gateway.IP)}}
		// Replies from remote clusters come back from the gateway through the cluster
		// network while the route back to their source is vx-strait: loose on the
		// underlay too (the one setting on a device that is not ours; never reverted,
		// as loosening cannot break traffic).
		if in.Underlay != "" {
			st.Sysctls["net/ipv4/conf/"+in.Underlay+"/rp_filter"] = "2"
		}
		mtu := RouteMTU(in.UnderlayMTU, in.CableOverhead, false)
		for _, p := range remote {
			st.Routes = append(st.Routes, kernel.Route{Table: Table, Dst: p, Dev: VXLANDevice,
				Gw: VTEP(in.Gateway.IP), Onlink: true, MTU: mtu})
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
func nftState(remote []netip.Prefix) *kernel.NFTable {
	clamp := kernel.NFTRule{Text: "ip daddr @" + RemoteSet + " tcp flags syn tcp option maxseg size set rt mtu"}
	clamp.Exprs = append(clamp.Exprs, kernel.DaddrInSet(RemoteSet)...)
	clamp.Exprs = append(clamp.Exprs, kernel.TCPSyn()...)
	clamp.Exprs = append(clamp.Exprs, kernel.ClampMSSToRoute()...)
	to := kernel.NFTRule{Text: "ip daddr @" + RemoteSet + " snat to ip saddr"}
	to.Exprs = append(to.Exprs, kernel.DaddrInSet(RemoteSet)...)
	to.Exprs = append(to.Exprs, kernel.SNATToSaddr()...)
	from := kernel.NFTRule{Text: "ip saddr @" + RemoteSet + " snat to ip saddr"}
	from.Exprs = append(from.Exprs, kernel.SaddrInSet(RemoteSet)...)
	from.Exprs = append(from.Exprs, kernel.SNATToSaddr()...)
	return &kernel.NFTable{Name: NFTable,
		Sets: []kernel.NFTSet{{Name: RemoteSet, Key: "ipv4_addr", Interval: true, Elements: kernel.IntervalElements(remote)}},
		Chains: []kernel.NFTChain{
			{Name: MSSChain, Type: "filter", Hook: "forward", Priority: -150, Rules: []kernel.NFTRule{clamp}},
			{Name: SourceChain, Type: "nat", Hook: "postrouting", Priority: SourceChainPriority, Rules: []kernel.NFTRule{to, from}},
		}}
}

// canonical sorts, masks and de-duplicates IPv4 prefixes.
func canonical(in []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range in {
		if p.IsValid() && p.Addr().Is4() {
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
