package globalnet

import (
	"net/netip"
	"strings"
	"testing"
)

func a(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestCompute(t *testing.T) {
	in := Input{
		LocalCIDRs:        []netip.Prefix{netip.MustParsePrefix("10.7.0.0/16"), netip.MustParsePrefix("10.96.0.0/16")},
		RemoteGlobalCIDRs: []netip.Prefix{netip.MustParsePrefix("242.0.2.0/24"), netip.MustParsePrefix("242.0.3.0/24")},
		EgressIPs:         []netip.Addr{a("242.0.1.2"), a("242.0.1.1"), a("242.0.1.1")},
		Ingress: []Ingress{
			{GlobalIP: a("242.0.1.20"), Endpoints: []netip.Addr{a("10.7.0.9"), a("10.7.0.8"), a("10.7.0.7")},
				Ports: []Port{{Port: 80, Target: 8080}, {Port: 443, Target: 8443}, {Port: 80, Target: 8080}}},
			{GlobalIP: a("242.0.1.10"), Endpoints: []netip.Addr{a("10.7.0.5")}, Ports: []Port{{Port: 53, Target: 53}}},
			{GlobalIP: a("242.0.1.11"), Endpoints: []netip.Addr{a("10.7.0.6")}, Pod: true},
			{GlobalIP: a("242.0.1.12")}, // no ready endpoint: no mapping
			{GlobalIP: a("242.0.1.21"), Endpoints: []netip.Addr{a("10.7.0.8"), a("10.7.0.7")}, Ports: []Port{{Port: 80, Target: 8080}},
				Sticky: true},
		},
	}
	st := Compute(in)
	if st.NFT == nil {
		t.Fatal("no table")
	}
	got := st.NFT.String()
	for _, want := range []string{
		"set gn-remote ipv4_addr interval\n    242.0.2.0/23\n",
		"set gn-local ipv4_addr interval\n    10.7.0.0/16\n    10.96.0.0/16\n",
		"map gn-egress integer : ipv4_addr\n    0 : 242.0.1.1\n    1 : 242.0.1.2\n",
		"map gn-pod-dnat ipv4_addr : ipv4_addr\n    242.0.1.11 : 10.7.0.6\n  map",
		"map gn-svc-dnat ipv4_addr : ipv4_addr\n    242.0.1.10 : 10.7.0.5\n  map",
		"map gn-svc-slots ipv4_addr . mark : ipv4_addr\n    242.0.1.20 . 0 : 10.7.0.7\n",
		"dnat to ip daddr map @gn-pod-dnat\n",
		"dnat to ip daddr map @gn-svc-dnat : ip daddr . th dport map @gn-svc-port\n",
		"map gn-svc-port ipv4_addr . inet_service : inet_service\n    242.0.1.10 . 53 : 53\n    242.0.1.20 . 443 : 8443\n    242.0.1.20 . 80 : 8080\n",
		"dnat to ip daddr . numgen random mod 16 map @gn-svc-slots : ip daddr . th dport map @gn-svc-port",
		"map gn-svc-sticky ipv4_addr . mark : ipv4_addr\n    242.0.1.21 . 0 : 10.7.0.7\n",
		"dnat to ip daddr . jhash ip saddr mod 16 seed 21335 map @gn-svc-sticky : ip daddr . th dport map @gn-svc-port",
		"map gn-pod-snat ipv4_addr : ipv4_addr\n    10.7.0.6 : 242.0.1.11\n",
		"242.0.1.20 . 0 : 10.7.0.7\n", "242.0.1.20 . 1 : 10.7.0.8\n", "242.0.1.20 . 2 : 10.7.0.9\n", "242.0.1.20 . 15 : 10.7.0.7\n",
		"snat to jhash ip saddr mod 2 map @gn-egress",
		"chain gn-ingress type=nat hook=prerouting priority=-110",
		"chain gn-egress type=nat hook=postrouting priority=80",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "242.0.1.12") {
		t.Errorf("a global IP without ready endpoints is mapped:\n%s", got)
	}
	if n := strings.Count(got, "242.0.1.20 . "); n != Slots+2 {
		t.Errorf("%d slots and ports for a 3-endpoint service with 2 ports, want %d", n, Slots+2)
	}
	for _, c := range st.NFT.Chains {
		for _, r := range c.Rules {
			if len(r.Exprs) == 0 {
				t.Errorf("rule %q has no expressions", r.Text)
			}
		}
	}
}

func TestComputeOffWithoutEgressOrRemotes(t *testing.T) {
	if st := Compute(Input{RemoteGlobalCIDRs: []netip.Prefix{netip.MustParsePrefix("242.0.2.0/24")}}); st.NFT != nil {
		t.Error("no egress IPs (globalnet off) must program nothing")
	}
	if st := Compute(Input{EgressIPs: []netip.Addr{a("242.0.1.1")}}); st.NFT != nil {
		t.Error("no remote global CIDRs must program nothing")
	}
}

// TestIPv6CIDRsAreNotGlobalnets: globalnet stays IPv4. A dual-stack member's IPv6 CIDRs,
// which reach it now that the agent keeps both families, put nothing into its sets:
// they are routed directly, by the route agent's table ip6.
func TestIPv6CIDRsAreNotGlobalnets(t *testing.T) {
	st := Compute(Input{
		LocalCIDRs:        []netip.Prefix{netip.MustParsePrefix("10.7.0.0/16"), netip.MustParsePrefix("2001:db8:7::/56")},
		RemoteGlobalCIDRs: []netip.Prefix{netip.MustParsePrefix("242.0.2.0/24"), netip.MustParsePrefix("2001:db8:9::/56")},
		EgressIPs:         []netip.Addr{a("242.0.1.1")},
	})
	if st.NFT == nil || st.NFT6 != nil {
		t.Fatalf("want table ip strait alone, got ip %v, ip6 %v", st.NFT != nil, st.NFT6 != nil)
	}
	if got := st.NFT.String(); strings.Contains(got, "2001:") {
		t.Fatalf("IPv6 in globalnet's sets:\n%s", got)
	}
}
