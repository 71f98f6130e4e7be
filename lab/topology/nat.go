package topology

import (
	"fmt"
	"net/netip"
	"strings"
)

// RouterUDPTimeout is how long, in seconds, a router whose gateways are behind its NAT
// keeps an idle UDP flow (unreplied or replied): shorter than Linux's defaults (30 s and
// 120 s) and than many home routers', so a test can idle past it, and twice the cables'
// keepalive interval (WireGuard's persistent keepalive and IPsec's NAT-T keepalive,
// 10 s), as in test/cabletest.
const RouterUDPTimeout = 20

// GatewayMapping is one gateway node behind its router's NAT: its LAN address and,
// behind a 1:1 NAT, the public WAN address the router holds for it.
type GatewayMapping struct {
	Node    string
	Private netip.Addr
	// Public is valid only behind a 1:1 NAT.
	Public netip.Prefix
}

// NATRuleset is the nft script of the router's table RouterTable, empty when the router
// translates nothing. It replaces the table whole, so it can be applied again. Behind a
// 1:1 NAT each gateway's public address is DNATed to its LAN address and the gateway's
// traffic to the WAN leaves SNATed from it; behind masquerade the gateways' traffic to
// the WAN leaves from the router's own WAN address. Either way a connection from the WAN
// to a gateway's LAN address is dropped unless the router made it (a reply, or a 1:1
// mapping): the other clusters can reach a gateway only through what the NAT forwards.
// The rest of the LAN is routed as before: the host's way into the lab and the hub's
// management network need it, and a gateway's other clusters never see it.
func (r Router) NATRuleset() string {
	if r.GatewayNAT == "" || len(r.Gateways) == 0 {
		return ""
	}
	var b strings.Builder
	// "add" then "delete" then the table: one transaction that replaces what is there.
	fmt.Fprintf(&b, "add table ip %[1]s\ndelete table ip %[1]s\ntable ip %[1]s {\n", RouterTable)
	private := make([]string, len(r.Gateways))
	for i, g := range r.Gateways {
		private[i] = g.Private.String()
	}
	set := "{ " + strings.Join(private, ", ") + " }"
	switch r.GatewayNAT {
	case GatewayNATOneToOne:
		b.WriteString("\tchain prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n")
		for _, g := range r.Gateways {
			fmt.Fprintf(&b, "\t\tiifname %q ip daddr %s dnat to %s\n", NodeWANLink, g.Public.Addr(), g.Private)
		}
		b.WriteString("\t}\n\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n")
		for _, g := range r.Gateways {
			fmt.Fprintf(&b, "\t\toifname %q ip saddr %s snat to %s\n", NodeWANLink, g.Private, g.Public.Addr())
		}
		b.WriteString("\t}\n")
	case GatewayNATMasquerade:
		fmt.Fprintf(&b, "\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy accept;\n\t\toifname %q ip saddr %s masquerade\n\t}\n", NodeWANLink, set)
	}
	fmt.Fprintf(&b, "\tchain forward {\n\t\ttype filter hook forward priority filter; policy accept;\n"+
		"\t\tiifname %[1]q ip daddr %[2]s ct state established,related accept\n"+
		"\t\tiifname %[1]q ip daddr %[2]s ct status dnat accept\n"+
		"\t\tiifname %[1]q ip daddr %[2]s drop\n\t}\n}\n", NodeWANLink, set)
	return b.String()
}

// PublicAddrs are the addresses the router holds on its WAN leg for the gateways behind
// its 1:1 NAT.
func (r Router) PublicAddrs() []netip.Prefix {
	var out []netip.Prefix
	for _, g := range r.Gateways {
		if g.Public.IsValid() {
			out = append(out, g.Public)
		}
	}
	return out
}
