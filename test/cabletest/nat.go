package cabletest

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NAT is how a site's gateway reaches the WAN.
type NAT int

// The ways a gateway sits on the WAN.
const (
	// NoNAT: the gateway owns its WAN address.
	NoNAT NAT = iota
	// NATOneToOne: a router owns the gateway's public address and maps it to the gateway's
	// private one both ways (a cloud's public IP).
	NATOneToOne
	// NATMasquerade: a router masquerades the gateway's traffic to its own address and
	// forwards nothing in (a firewall at home or on premises).
	NATMasquerade
)

func (n NAT) String() string {
	return [...]string{"no NAT", "1:1 NAT", "masquerade"}[n]
}

// natTable is the nftables table of a lab router.
const natTable = "cabletest-nat"

// UDPTimeout is the router's UDP conntrack timeout, for both unreplied and replied flows:
// shorter than Linux's default (30 s / 120 s) so a test can idle past it, longer than
// the cables' keepalives (WireGuard's and IPsec's NAT-T keepalive, 10 s; IPsec's
// dead-peer detection after 10 s without inbound traffic).
const UDPTimeout = 20

// connectBehindNAT puts s's gateway behind its router: a private link between them, the
// gateway's default route via the router, and the router's NAT rules (nftables, in a
// table of its own).
func connectBehindNAT(t testing.TB, s Site) {
	t.Helper()
	MustRun(t, "ip", "-n", s.GatewayNS, "link", "add", "eth0", "type", "veth", "peer", "name", "lan0", "netns", s.RouterNS)
	MustRun(t, "ip", "-n", s.GatewayNS, "addr", "add", s.PrivateIP.String()+"/24", "dev", "eth0")
	MustRun(t, "ip", "-n", s.GatewayNS, "link", "set", "eth0", "up")
	routerIP := s.PrivateIP.Prev()
	MustRun(t, "ip", "-n", s.RouterNS, "addr", "add", routerIP.String()+"/24", "dev", "lan0")
	MustRun(t, "ip", "-n", s.RouterNS, "link", "set", "lan0", "up")
	MustRun(t, "ip", "-n", s.GatewayNS, "route", "add", "default", "via", routerIP.String())
	MustRun(t, "ip", "netns", "exec", s.RouterNS, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	// The conntrack sysctls exist once the namespace has a NAT table. Timestamps tell
	// a flow that lived on from one made again (cableFlow).
	nft(t, s.RouterNS, routerRules(s))
	for _, k := range []string{"net.netfilter.nf_conntrack_udp_timeout", "net.netfilter.nf_conntrack_udp_timeout_stream"} {
		MustRun(t, "ip", "netns", "exec", s.RouterNS, "sysctl", "-qw", fmt.Sprintf("%s=%d", k, UDPTimeout))
	}
	MustRun(t, "ip", "netns", "exec", s.RouterNS, "sysctl", "-qw", "net.netfilter.nf_conntrack_timestamp=1")
}

// routerRules is the router's ruleset for s.
func routerRules(s Site) string {
	var b strings.Builder
	fmt.Fprintf(&b, "table ip %s {\n", natTable)
	switch s.NAT {
	case NATOneToOne:
		fmt.Fprintf(&b, "  chain pre { type nat hook prerouting priority dstnat; ip daddr %s dnat to %s; }\n", s.WANIP, s.PrivateIP)
		fmt.Fprintf(&b, "  chain post { type nat hook postrouting priority srcnat; ip saddr %s snat to %s; }\n", s.PrivateIP, s.WANIP)
	case NATMasquerade:
		b.WriteString("  chain post { type nat hook postrouting priority srcnat; oifname \"eth0\" masquerade; }\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func nft(t testing.TB, ns, rules string) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	cmd.Stderr = os.Stderr
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("nft in %s: %v: %s\n%s", ns, err, out, rules)
	}
}

// cableFlow is the router's conntrack entry (its NAT mapping) for the UDP flow of s's
// gateway from its cable port (RouterFlow).
func cableFlow(s Site, port int) (start uint64, public uint16, err error) {
	return RouterFlow(s.RouterNS, s.PrivateIP, port, netip.Addr{})
}

// RouterFlow is the conntrack entry of a NAT router (network namespace routerNS) for the
// UDP flow of the gateway at private from its cable port to peer, the other end's
// address on the WAN (any peer when invalid: a gateway with one cable): its start time
// (the namespace needs nf_conntrack_timestamp on) and the public port it was mapped to.
// The same start before and after an idle period says the mapping never lapsed. A
// gateway of a set of three has a flow per remote cluster on the same port, so the peer
// tells them apart.
func RouterFlow(routerNS string, private netip.Addr, port int, peer netip.Addr) (start uint64, public uint16, err error) {
	h, err := netns.GetFromName(routerNS)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = h.Close() }()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		return 0, 0, err
	}
	defer nl.Close()
	flows, err := nl.ConntrackTableList(netlink.ConntrackTable, unix.AF_INET)
	if err != nil {
		return 0, 0, fmt.Errorf("conntrack in %s: %w", routerNS, err)
	}
	ip := private.AsSlice()
	from := func(a net.IP) bool { return !peer.IsValid() || a.Equal(peer.AsSlice()) }
	for _, f := range flows {
		switch {
		case f.Forward.Protocol != unix.IPPROTO_UDP:
		case f.Forward.SrcIP.Equal(ip) && f.Forward.SrcPort == uint16(port) && from(f.Forward.DstIP):
			// Opened by the gateway (behind masquerade always).
			return f.TimeStart, f.Reverse.DstPort, nil
		case f.Reverse.SrcIP.Equal(ip) && f.Reverse.SrcPort == uint16(port) && from(f.Forward.SrcIP):
			// Opened from the WAN, through a 1:1 mapping.
			return f.TimeStart, f.Forward.DstPort, nil
		}
	}
	return 0, 0, fmt.Errorf("no conntrack entry in %s for %s:%d to %s", routerNS, private, port, peer)
}
