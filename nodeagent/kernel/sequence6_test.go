package kernel

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
)

// The IPv6 steps of the sequence: vx-test carries both families over an IPv4 underlay,
// then IPv6 alone over an IPv6 underlay. Their VTEPs are in fd53:7472:6169::/96 (the
// route agent's), the underlay in 2001:db8::/64, inside the test's namespaces only.

// lookupRule6 is "ip6 daddr @<set> counter".
func lookupRule6(set string) NFTRule {
	return NFTRule{Text: "ip6 daddr @" + set + " counter", Exprs: append(DaddrInSetOf(IPv6, set), &expr.Counter{})}
}

// keepSource6 is "ip6 saddr @<set> snat ip6 to ip6 saddr", the route agent's identity
// mapping in table ip6.
func keepSource6(set string) NFTRule {
	return NFTRule{Text: "ip6 saddr @" + set + " snat ip6 to ip6 saddr", Exprs: append(SaddrInSetOf(IPv6, set), SNATToSaddrOf(IPv6)...)}
}

func table6(remote []string, rules ...NFTRule) *NFTable {
	var ps []netip.Prefix
	for _, r := range remote {
		ps = append(ps, pfx(r))
	}
	return &NFTable{Name: "strait-test", Family: IPv6,
		Sets: []NFTSet{{Name: "remote", Key: "ipv6_addr", Interval: true, Elements: IntervalElementsOf(IPv6, ps)}},
		Chains: []NFTChain{
			{Name: "forward", Type: "filter", Hook: "forward", Priority: 0, Rules: rules},
			{Name: "keep", Type: "nat", Hook: "postrouting", Priority: 90, Rules: []NFTRule{keepSource6("remote")}},
		}}
}

func ipv6Steps() []step {
	route6 := func(dst, gw string, mtu int) Route {
		return Route{Table: 4242, Dst: pfx(dst), Gw: ip(gw), Dev: "vx-test", Onlink: true, MTU: mtu}
	}
	rpf := map[string]string{"net/ipv4/conf/vx-test/rp_filter": "2"}
	dual := vx(1450, "10.0.0.2")
	dual.Addrs = append(dual.Addrs, pfx("fd53:7472:6169::a00:1/96"))
	dual.Neighbors = append(dual.Neighbors, Neighbor{IP: ip("fd53:7472:6169::a00:2"), MAC: "0a:73:0a:00:00:02"})
	over6 := Link{Name: "vx-test", Kind: "vxlan", MTU: 1430, Up: true,
		VXLAN: &VXLAN{VNI: 4242, Port: 4804, Local: ip("2001:db8::1"), Parent: "eth0"},
		Addrs: []netip.Prefix{pfx("fd53:7472:6169::1/96")}, MAC: "0a:73:00:00:00:01",
		FDB:       []netip.Addr{ip("2001:db8::3")},
		Neighbors: []Neighbor{{IP: ip("fd53:7472:6169::3"), MAC: "0a:73:00:00:00:03"}}}
	return []step{
		{name: "dual-stack over IPv4", want: State{
			Links: []Link{dual}, Sysctls: rpf,
			Rules: []Rule{{Priority: 4242, Table: 4242}, {Priority: 4242, Table: 4242, Family: IPv6}},
			Routes: []Route{route("10.8.0.0/16", "241.0.0.2", 1370),
				route6("2001:db8:8::/56", "fd53:7472:6169::a00:2", 1370), route6("2001:db8:9::/56", "fd53:7472:6169::a00:2", 1370)},
			NFT: table([]string{"10.8.0.0/16"}, nil, lookupRule("remote")),
			NFT6: table6([]string{"2001:db8:8::/56", "2001:db8:8:100::/56", "2001:db8:9::/56",
				"2001:db8:9:300::/56", "2001:db8:9:400::/56"}, lookupRule6("remote")),
		}, dump: `link vx-test vxlan vni=4242 port=4804 local=10.0.0.1 parent=eth0 mtu=1450 mac=0a:73:0a:00:00:01 up
  addr 241.0.0.1/8
  addr fd53:7472:6169::a00:1/96
  fdb 10.0.0.2
  neighbor 241.0.0.2 lladdr 0a:73:0a:00:00:02
  neighbor fd53:7472:6169::a00:2 lladdr 0a:73:0a:00:00:02
  rp_filter=2
route table=4242 proto=242 10.8.0.0/16 via 241.0.0.2 dev vx-test onlink mtu=1370
route table=4242 proto=242 2001:db8:8::/56 via fd53:7472:6169::a00:2 dev vx-test onlink mtu=1370
route table=4242 proto=242 2001:db8:9::/56 via fd53:7472:6169::a00:2 dev vx-test onlink mtu=1370
rule ip6 pref=4242 table=4242
rule pref=4242 table=4242
nft table ip strait-test
  map ingress ipv4_addr : ipv4_addr
  set remote ipv4_addr interval
    10.8.0.0/16
  chain forward type=filter hook=forward priority=0
    ip daddr @remote counter
nft table ip6 strait-test
  set remote ipv6_addr interval
    2001:db8:8::/55
    2001:db8:9:300::-2001:db8:9:4ff:ffff:ffff:ffff:ffff
    2001:db8:9::/56
  chain forward type=filter hook=forward priority=0
    ip6 daddr @remote counter
  chain keep type=nat hook=postrouting priority=90
    ip6 saddr @remote snat ip6 to ip6 saddr
`},
		{name: "IPv6 only, over an IPv6 underlay", want: State{
			Links: []Link{over6}, Sysctls: rpf, // a new device's rp_filter is the namespace's default
			Rules: []Rule{{Priority: 4242, Table: 4242, Family: IPv6}},
			Routes: []Route{route6("2001:db8:9::/56", "fd53:7472:6169::3", 1350),
				route6("2001:db8:a::/56", "fd53:7472:6169::3", 1350)},
			NFT6: table6([]string{"2001:db8:9::/56", "2001:db8:a::/56"}, lookupRule6("remote")),
		}, dump: `link vx-test vxlan vni=4242 port=4804 local=2001:db8::1 parent=eth0 mtu=1430 mac=0a:73:00:00:00:01 up
  addr fd53:7472:6169::1/96
  fdb 2001:db8::3
  neighbor fd53:7472:6169::3 lladdr 0a:73:00:00:00:03
  rp_filter=2
route table=4242 proto=242 2001:db8:9::/56 via fd53:7472:6169::3 dev vx-test onlink mtu=1350
route table=4242 proto=242 2001:db8:a::/56 via fd53:7472:6169::3 dev vx-test onlink mtu=1350
rule ip6 pref=4242 table=4242
nft table ip6 strait-test
  set remote ipv6_addr interval
    2001:db8:9::/56
    2001:db8:a::/56
  chain forward type=filter hook=forward priority=0
    ip6 daddr @remote counter
  chain keep type=nat hook=postrouting priority=90
    ip6 saddr @remote snat ip6 to ip6 saddr
`},
	}
}

// route is the IPv4 route of the steps.
func route(dst, gw string, mtu int) Route {
	return Route{Table: 4242, Dst: pfx(dst), Gw: ip(gw), Dev: "vx-test", Onlink: true, MTU: mtu}
}

// TestEmptyIP6TableIsNotCreated: a State whose ip6 table holds nothing leaves no table
// ip6 on the node (an IPv4-only node looks as before IPv6), and one that empties removes
// it.
func TestEmptyIP6TableIsNotCreated(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	empty := State{NFT: table([]string{"10.8.0.0/16"}, nil), NFT6: &NFTable{Name: "strait-test", Family: IPv6}}
	if err := Apply(ctx, f, testOwn, empty); err != nil {
		t.Fatal(err)
	}
	if t6, _ := f.NFTable(ctx, IPv6, "strait-test"); t6 != nil {
		t.Fatalf("an empty ip6 table was created: %+v", t6)
	}
	full := empty
	full.NFT6 = table6([]string{"2001:db8:8::/56"})
	if err := Apply(ctx, f, testOwn, full); err != nil {
		t.Fatal(err)
	}
	if t6, _ := f.NFTable(ctx, IPv6, "strait-test"); t6 == nil {
		t.Fatal("no ip6 table")
	}
	if err := Apply(ctx, f, testOwn, empty); err != nil {
		t.Fatal(err)
	}
	if t6, _ := f.NFTable(ctx, IPv6, "strait-test"); t6 != nil {
		t.Fatalf("the ip6 table stayed: %+v", t6)
	}
	if t4, _ := f.NFTable(ctx, IPv4, "strait-test"); t4 == nil {
		t.Fatal("the ip table went with it")
	}
}

// TestRuleIDsDifferByFamily: the identity mapping of table ip6 (the NAT's family, the
// IPv6 header's offsets) has another ID than table ip's under the same text, so a rule
// written for the wrong family is rewritten; an IPv4 rule's ID is what it was before
// IPv6 (the zero Family), so upgrading rewrites nothing.
func TestRuleIDsDifferByFamily(t *testing.T) {
	r4 := NFTRule{Text: "snat", Exprs: SNATToSaddrOf(IPv4)}
	r6 := NFTRule{Text: "snat", Exprs: SNATToSaddrOf(IPv6)}
	if r4.ID(IPv4) != r4.ID("") || r4.ID(IPv4) != (NFTRule{Text: "snat", Exprs: SNATToSaddr()}).ID(IPv4) {
		t.Fatal("the zero Family is not IPv4")
	}
	if r4.ID(IPv4) == r6.ID(IPv6) {
		t.Fatal("one ID for both families' identity mapping")
	}
}

func TestIntervalElementsOfIPv6(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"2001:db8:1::/48", "10.0.0.0/8"}, "2001:db8:1::/48"}, // the other family is left out
		{[]string{"2001:db8:1::/48", "2001:db8::/48"}, "2001:db8::/47"},
		{[]string{"2001:db8:1::/48", "2001:db8:2::/48"}, "2001:db8:1::-2001:db8:2:ffff:ffff:ffff:ffff:ffff"},
		{[]string{"2001:db8::5/128", "2001:db8:9::/64"}, "2001:db8::5 2001:db8:9::/64"},
		{[]string{"::/0", "2001:db8::/32"}, "::/0"},
		{[]string{"::ffff:10.0.0.0/104"}, ""}, // IPv4-mapped: neither family's
	} {
		var ps []netip.Prefix
		for _, s := range tc.in {
			ps = append(ps, pfx(s))
		}
		var got []string
		for _, e := range IntervalElementsOf(IPv6, ps) {
			got = append(got, e.Key)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("IntervalElementsOf(ip6, %v) = %q, want %q", tc.in, g, tc.want)
		}
	}
}
