package route

import (
	"net/netip"
	"strings"
	"testing"
)

// checkSummary fails t unless every want line is in the summary of in's state and no
// none line is.
func checkSummary(t *testing.T, in Input, want, none []string) {
	t.Helper()
	got := summary(Compute(in))
	for _, w := range want {
		if !strings.Contains(got, w+"\n") {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
	for _, n := range none {
		if strings.Contains(got, n) {
			t.Errorf("%q must not be in:\n%s", n, got)
		}
	}
}

// TestComputeDualStack: over an IPv4 underlay vx-strait carries both families: an IPv6
// VTEP beside the IPv4 one, the gateway's IPv6 VTEP as a permanent neighbor with the
// same derived MAC, IPv6 routes through it, a rule and a table per family.
func TestComputeDualStack(t *testing.T) {
	nodes := []Node{n("gw1", "10.0.0.1"), n("gw2", "10.0.0.2"), n("plain", "10.0.0.3")}
	in := Input{Nodes: nodes, Underlay: "eth0", UnderlayMTU: 1500, CableOverhead: 80,
		RemoteCIDRs: prefixes("10.20.0.0/16", "2001:db8:20::/56", "2001:db8:20::/56", "2001:db8:96::5/112")}
	in.Self, in.Gateway = nodes[2], nodes[0]
	checkSummary(t, in, []string{
		"link vx-strait vni=4242 port=4804 local=10.0.0.3 parent=eth0 mtu=1450 addrs=[241.0.0.3/8 fd53:7472:6169::a00:3/96] fdb=[10.0.0.1]",
		"neighbor 241.0.0.1 0a:73:0a:00:00:01",
		"neighbor fd53:7472:6169::a00:1 0a:73:0a:00:00:01",
		"route table=4242 proto=0 10.20.0.0/16 via 241.0.0.1 dev vx-strait onlink mtu=1420",
		"route table=4242 proto=0 2001:db8:20::/56 via fd53:7472:6169::a00:1 dev vx-strait onlink mtu=1420",
		"route table=4242 proto=0 2001:db8:96::/112 via fd53:7472:6169::a00:1 dev vx-strait onlink mtu=1420",
		"rule 4242 4242", "rule6 4242 4242",
		"sysctl net/ipv4/conf/vx-strait/rp_filter=2", "sysctl net/ipv4/conf/eth0/rp_filter=2",
		"sysctl net/ipv6/conf/vx-strait/disable_ipv6=0",
		"set remote-cidrs ipv4_addr 10.20.0.0/16",
		"ip6 set remote-cidrs ipv6_addr 2001:db8:20::/56 2001:db8:96::/112",
		"ip6 chain mss-clamp filter forward -150: ip6 daddr @remote-cidrs tcp flags syn tcp option maxseg size set rt mtu",
		"ip6 chain keep-remote-source nat postrouting 90: ip6 daddr @remote-cidrs snat ip6 to ip6 saddr",
		"ip6 chain keep-remote-source nat postrouting 90: ip6 saddr @remote-cidrs snat ip6 to ip6 saddr",
	}, nil)

	in.Self = nodes[0] // the active gateway only receives, in both families
	checkSummary(t, in, []string{
		"link vx-strait vni=4242 port=4804 local=10.0.0.1 parent=eth0 mtu=1450 addrs=[241.0.0.1/8 fd53:7472:6169::a00:1/96] fdb=[10.0.0.2 10.0.0.3]",
		"rule 4242 4242", "rule6 4242 4242",
		"ip6 set remote-cidrs ipv6_addr 2001:db8:20::/56 2001:db8:96::/112",
	}, []string{"route ", "neighbor "})
}

// TestComputeIPv6Only: a node whose underlay is IPv6 runs VXLAN over IPv6 (70 bytes),
// has no IPv4 VTEP, derives its MAC and IPv6 VTEP from the underlay's four low bytes,
// and routes no IPv4.
func TestComputeIPv6Only(t *testing.T) {
	nodes := []Node{n("gw1", "2001:db8:0:1::a:1"), n("plain", "2001:db8:0:1::a:3"), n("v4", "10.0.0.9")}
	in := Input{Nodes: nodes, Underlay: "eth0", UnderlayMTU: 1500, CableOverhead: 0,
		RemoteCIDRs: prefixes("2001:db8:20::/56", "10.20.0.0/16")}
	in.Self, in.Gateway = nodes[1], nodes[0]
	checkSummary(t, in, []string{
		"link vx-strait vni=4242 port=4804 local=2001:db8:0:1::a:3 parent=eth0 mtu=1430 addrs=[fd53:7472:6169::a:3/96] fdb=[2001:db8:0:1::a:1]",
		"neighbor fd53:7472:6169::a:1 0a:73:00:0a:00:01",
		"route table=4242 proto=0 2001:db8:20::/56 via fd53:7472:6169::a:1 dev vx-strait onlink mtu=1430",
		"rule6 4242 4242",
		"ip6 set remote-cidrs ipv6_addr 2001:db8:20::/56",
	}, []string{"241.", "10.20.0.0", "rule 4242", "rp_filter", "\nset remote-cidrs"})

	in.Self = nodes[0] // FDB entries only for nodes of the underlay's family
	checkSummary(t, in, []string{
		"link vx-strait vni=4242 port=4804 local=2001:db8:0:1::a:1 parent=eth0 mtu=1430 addrs=[fd53:7472:6169::a:1/96] fdb=[2001:db8:0:1::a:3]",
	}, []string{"10.0.0.9"})

	// IPv4 remote CIDRs alone: nothing to route over an IPv6 underlay.
	in.RemoteCIDRs = prefixes("10.20.0.0/16")
	if got := summary(Compute(in)); got != "" {
		t.Fatalf("want nothing, got:\n%s", got)
	}
}

// TestIPv4OnlyNodeHasNothingOfIPv6: an IPv4-only cluster's nodes look as before IPv6:
// no IPv6 VTEP, rule, sysctl or table.
func TestIPv4OnlyNodeHasNothingOfIPv6(t *testing.T) {
	nodes := []Node{n("gw1", "10.0.0.1"), n("plain", "10.0.0.3")}
	for _, self := range nodes {
		st := Compute(Input{Self: self, Nodes: nodes, Gateway: nodes[0], Underlay: "eth0", UnderlayMTU: 1500,
			RemoteCIDRs: prefixes("10.20.0.0/16")})
		if st.NFT6 != nil {
			t.Errorf("%s: an ip6 table: %+v", self.Name, st.NFT6)
		}
		got := summary(st)
		for _, bad := range []string{"fd53", "rule6", "ipv6"} {
			if strings.Contains(got, bad) {
				t.Errorf("%s: %q in:\n%s", self.Name, bad, got)
			}
		}
	}
}

func TestVTEP6AndMAC(t *testing.T) {
	for _, tc := range []struct{ node, vtep6, mac string }{
		{"192.168.7.9", "fd53:7472:6169::c0a8:709", "0a:73:c0:a8:07:09"},
		{"2001:db8::10:c0a8:709", "fd53:7472:6169::c0a8:709", "0a:73:c0:a8:07:09"},
	} {
		a := netip.MustParseAddr(tc.node)
		if got := VTEP6(a).String(); got != tc.vtep6 {
			t.Errorf("VTEP6(%s) = %s, want %s", a, got, tc.vtep6)
		}
		if got := VTEPMAC(a); got != tc.mac {
			t.Errorf("VTEPMAC(%s) = %s, want %s", a, got, tc.mac)
		}
		if !VTEP6Prefix.Contains(VTEP6(a)) {
			t.Errorf("VTEP6(%s) outside %s", a, VTEP6Prefix)
		}
	}
}
