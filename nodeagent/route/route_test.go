package route

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/straitnet/strait/nodeagent/kernel"
)

func n(name, ip string) Node { return Node{Name: name, IP: netip.MustParseAddr(ip)} }

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func TestCompute(t *testing.T) {
	nodes := []Node{n("gw1", "10.0.0.1"), n("gw2", "10.0.0.2"), n("plain", "10.0.0.3")}
	base := Input{Nodes: nodes, Underlay: "eth0", UnderlayMTU: 1500, CableOverhead: 80,
		RemoteCIDRs: prefixes("10.20.0.0/16", "10.10.0.0/16", "10.20.0.0/16")}
	for _, tc := range []struct {
		name   string
		mutate func(*Input)
		want   []string // lines that must be in the summary
		none   bool
	}{
		{name: "plain node routes remote CIDRs to the gateway's VTEP", mutate: func(in *Input) {
			in.Self, in.Gateway = nodes[2], nodes[0]
		}, want: []string{
			"link vx-strait vni=4242 port=4804 local=10.0.0.3 parent=eth0 mtu=1450 addrs=[241.0.0.3/8] fdb=[10.0.0.1]",
			"route table=4242 proto=0 10.10.0.0/16 via 241.0.0.1 dev vx-strait onlink mtu=1420",
			"route table=4242 proto=0 10.20.0.0/16 via 241.0.0.1 dev vx-strait onlink mtu=1420",
			"rule 4242 4242", "sysctl net/ipv4/conf/vx-strait/rp_filter=2",
			"set remote-cidrs ipv4_addr 10.10.0.0/16 10.20.0.0/16",
		}},
		{name: "passive gateway is a plain node", mutate: func(in *Input) {
			in.Self, in.Gateway = nodes[1], nodes[0]
		}, want: []string{"route table=4242 proto=0 10.10.0.0/16 via 241.0.0.1 dev vx-strait onlink mtu=1420"}},
		{name: "active gateway only receives on vx-strait", mutate: func(in *Input) {
			in.Self, in.Gateway = nodes[0], nodes[0]
		}, want: []string{
			"link vx-strait vni=4242 port=4804 local=10.0.0.1 parent=eth0 mtu=1450 addrs=[241.0.0.1/8] fdb=[10.0.0.2 10.0.0.3]",
			"set remote-cidrs ipv4_addr 10.10.0.0/16 10.20.0.0/16",
			"chain mss-clamp filter forward -150: ip daddr @remote-cidrs tcp flags syn tcp option maxseg size set rt mtu",
			// Ahead of every srcnat (100) masquerade, kube-proxy's and the CNI's: remote
			// traffic keeps its addresses both ways.
			"chain keep-remote-source nat postrouting 90: ip daddr @remote-cidrs snat to ip saddr",
			"chain keep-remote-source nat postrouting 90: ip saddr @remote-cidrs snat to ip saddr",
		}},
		{name: "every node keeps the CNI's masquerade off remote traffic", mutate: func(in *Input) {
			in.Self, in.Gateway = nodes[2], nodes[0]
		}, want: []string{
			"chain keep-remote-source nat postrouting 90: ip daddr @remote-cidrs snat to ip saddr",
			"chain keep-remote-source nat postrouting 90: ip saddr @remote-cidrs snat to ip saddr",
		}},
		{name: "small cable overhead: the VXLAN leg decides the MTU", mutate: func(in *Input) {
			in.Self, in.Gateway, in.CableOverhead = nodes[2], nodes[0], 0
		}, want: []string{"route table=4242 proto=0 10.10.0.0/16 via 241.0.0.1 dev vx-strait onlink mtu=1450"}},
		{name: "no active gateway: nothing", mutate: func(in *Input) { in.Self = nodes[2] }, none: true},
		{name: "no peers: nothing", mutate: func(in *Input) {
			in.Self, in.Gateway, in.RemoteCIDRs = nodes[2], nodes[0], nil
		}, none: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			tc.mutate(&in)
			got := summary(Compute(in))
			if tc.none {
				if got != "" {
					t.Fatalf("want nothing, got:\n%s", got)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w+"\n") {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			if in.Self.Name == in.Gateway.Name && strings.Contains(got, "route ") {
				t.Errorf("the active gateway must not route into vx-strait:\n%s", got)
			}
		})
	}
}

func summary(s kernel.State) string {
	var b strings.Builder
	for _, l := range s.Links {
		b.WriteString("link " + l.Name)
		v := l.VXLAN
		b.WriteString(" vni=" + itoa(v.VNI) + " port=" + itoa(v.Port) + " local=" + v.Local.String() +
			" parent=" + v.Parent + " mtu=" + itoa(l.MTU) + " addrs=" + join(l.Addrs) + " fdb=" + join(l.FDB) + "\n")
		for _, n := range l.Neighbors {
			b.WriteString("neighbor " + n.IP.String() + " " + n.MAC + "\n")
		}
	}
	for _, r := range s.Routes {
		b.WriteString("route " + r.String() + "\n")
	}
	for _, r := range s.Rules {
		if r.Family == kernel.IPv6 {
			b.WriteString("rule6 " + itoa(r.Priority) + " " + itoa(r.Table) + "\n")
		} else {
			b.WriteString("rule " + itoa(r.Priority) + " " + itoa(r.Table) + "\n")
		}
	}
	for k, v := range s.Sysctls {
		b.WriteString("sysctl " + k + "=" + v + "\n")
	}
	for _, t := range []*kernel.NFTable{s.NFT, s.NFT6} {
		if t == nil {
			continue
		}
		prefix := ""
		if t == s.NFT6 {
			prefix = "ip6 "
		}
		for _, set := range t.Sets {
			var els []string
			for _, e := range set.Elements {
				els = append(els, e.Key)
			}
			b.WriteString(prefix + "set " + set.Name + " " + set.Key + " " + strings.Join(els, " ") + "\n")
		}
		for _, c := range t.Chains {
			for _, r := range c.Rules {
				b.WriteString(prefix + "chain " + c.Name + " " + c.Type + " " + c.Hook + " " + itoa(c.Priority) + ": " + r.Text + "\n")
			}
		}
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

func join[T interface{ String() string }](in []T) string {
	var s []string
	for _, v := range in {
		s = append(s, v.String())
	}
	return "[" + strings.Join(s, " ") + "]"
}

func TestVTEP(t *testing.T) {
	if got := VTEP(netip.MustParseAddr("192.168.7.9")); got != netip.MustParseAddr("241.168.7.9") {
		t.Fatal(got)
	}
}
