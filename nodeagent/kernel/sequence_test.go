package kernel

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/nftables/expr"
)

var testOwn = Ownership{LinkNames: []string{"vx-test"}, Table: 4242, Protocol: 242, RulePriority: 4242, NFTable: "strait-test"}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func ip(s string) netip.Addr    { return netip.MustParseAddr(s) }

func vx(mtu int, fdb ...string) Link {
	l := Link{Name: "vx-test", Kind: "vxlan", MTU: mtu, Up: true,
		VXLAN: &VXLAN{VNI: 4242, Port: 4804, Local: ip("10.0.0.1"), Parent: "eth0"},
		Addrs: []netip.Prefix{pfx("241.0.0.1/8")}, MAC: "0a:73:0a:00:00:01"}
	for _, f := range fdb {
		b := ip(f).As4()
		l.FDB = append(l.FDB, ip(f))
		l.Neighbors = append(l.Neighbors, Neighbor{IP: netip.AddrFrom4([4]byte{241, b[1], b[2], b[3]}),
			MAC: fmt.Sprintf("0a:73:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3])})
	}
	return l
}

// lookupRule is "ip daddr @<set> counter".
func lookupRule(set string) NFTRule {
	return NFTRule{Text: "ip daddr @" + set + " counter", Exprs: []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
		&expr.Lookup{SourceRegister: 1, SetName: set},
		&expr.Counter{},
	}}
}

func table(remote []string, mapped map[string]string, rules ...NFTRule) *NFTable {
	var ps []netip.Prefix
	for _, r := range remote {
		ps = append(ps, pfx(r))
	}
	m := NFTSet{Name: "ingress", Key: "ipv4_addr", Value: "ipv4_addr"}
	for k, v := range mapped {
		m.Elements = append(m.Elements, NFTElement{Key: k, Value: v})
	}
	return &NFTable{Name: "strait-test",
		Sets:   []NFTSet{{Name: "remote", Key: "ipv4_addr", Interval: true, Elements: IntervalElements(ps)}, m},
		Chains: []NFTChain{{Name: "forward", Type: "filter", Hook: "forward", Priority: 0, Rules: rules}}}
}

type step struct {
	name string
	want State
	dump string
}

func steps() []step {
	route := func(dst, gw string, mtu int) Route {
		return Route{Table: 4242, Dst: pfx(dst), Gw: ip(gw), Dev: "vx-test", Onlink: true, MTU: mtu}
	}
	rpf := map[string]string{"net/ipv4/conf/vx-test/rp_filter": "2"}
	rule := []Rule{{Priority: 4242, Table: 4242}}
	return append([]step{
		{name: "empty", want: State{}, dump: ""},
		{name: "one gateway", want: State{
			Links: []Link{vx(1450, "10.0.0.2")}, Sysctls: rpf, Rules: rule,
			Routes: []Route{route("10.8.0.0/16", "241.0.0.2", 1370)},
			NFT:    table([]string{"10.8.0.0/16"}, nil, lookupRule("remote")),
		}, dump: `link vx-test vxlan vni=4242 port=4804 local=10.0.0.1 parent=eth0 mtu=1450 mac=0a:73:0a:00:00:01 up
  addr 241.0.0.1/8
  fdb 10.0.0.2
  neighbor 241.0.0.2 lladdr 0a:73:0a:00:00:02
  rp_filter=2
route table=4242 proto=242 10.8.0.0/16 via 241.0.0.2 dev vx-test onlink mtu=1370
rule pref=4242 table=4242
nft table ip strait-test
  map ingress ipv4_addr : ipv4_addr
  set remote ipv4_addr interval
    10.8.0.0/16
  chain forward type=filter hook=forward priority=0
    ip daddr @remote counter
`},
		{name: "gateway moved, second peer, adjacent CIDRs, NAT entries", want: State{
			Links: []Link{vx(1400, "10.0.0.3")}, Sysctls: rpf, Rules: rule,
			Routes: []Route{route("10.8.0.0/16", "241.0.0.3", 1320), route("10.9.0.0/16", "241.0.0.3", 1320)},
			NFT: table([]string{"10.8.0.0/16", "10.9.0.0/16", "10.20.0.0/16"},
				map[string]string{"242.0.0.5": "10.7.0.5", "242.0.0.6": "10.7.0.6"}, lookupRule("remote")),
		}, dump: `link vx-test vxlan vni=4242 port=4804 local=10.0.0.1 parent=eth0 mtu=1400 mac=0a:73:0a:00:00:01 up
  addr 241.0.0.1/8
  fdb 10.0.0.3
  neighbor 241.0.0.3 lladdr 0a:73:0a:00:00:03
  rp_filter=2
route table=4242 proto=242 10.8.0.0/16 via 241.0.0.3 dev vx-test onlink mtu=1320
route table=4242 proto=242 10.9.0.0/16 via 241.0.0.3 dev vx-test onlink mtu=1320
rule pref=4242 table=4242
nft table ip strait-test
  map ingress ipv4_addr : ipv4_addr
    242.0.0.5 : 10.7.0.5
    242.0.0.6 : 10.7.0.6
  set remote ipv4_addr interval
    10.20.0.0/16
    10.8.0.0/15
  chain forward type=filter hook=forward priority=0
    ip daddr @remote counter
`},
		{name: "peer removed, mapping changed, rule changed", want: State{
			Links: []Link{vx(1400, "10.0.0.3")}, Sysctls: rpf, Rules: rule,
			Routes: []Route{route("10.9.0.0/16", "241.0.0.3", 1320)},
			NFT: table([]string{"10.9.0.0/16"}, map[string]string{"242.0.0.5": "10.7.0.9"},
				lookupRule("remote"), NFTRule{Text: "counter", Exprs: []expr.Any{&expr.Counter{}}}),
		}, dump: `link vx-test vxlan vni=4242 port=4804 local=10.0.0.1 parent=eth0 mtu=1400 mac=0a:73:0a:00:00:01 up
  addr 241.0.0.1/8
  fdb 10.0.0.3
  neighbor 241.0.0.3 lladdr 0a:73:0a:00:00:03
  rp_filter=2
route table=4242 proto=242 10.9.0.0/16 via 241.0.0.3 dev vx-test onlink mtu=1320
rule pref=4242 table=4242
nft table ip strait-test
  map ingress ipv4_addr : ipv4_addr
    242.0.0.5 : 10.7.0.9
  set remote ipv4_addr interval
    10.9.0.0/16
  chain forward type=filter hook=forward priority=0
    ip daddr @remote counter
    counter
`},
		{name: "vni changed: device recreated with its routes", want: State{
			Links:   []Link{func() Link { l := vx(1400, "10.0.0.3"); l.VXLAN.VNI = 4343; return l }()},
			Sysctls: rpf, Rules: rule,
			Routes: []Route{route("10.9.0.0/16", "241.0.0.3", 1320)},
		}, dump: `link vx-test vxlan vni=4343 port=4804 local=10.0.0.1 parent=eth0 mtu=1400 mac=0a:73:0a:00:00:01 up
  addr 241.0.0.1/8
  fdb 10.0.0.3
  neighbor 241.0.0.3 lladdr 0a:73:0a:00:00:03
  rp_filter=2
route table=4242 proto=242 10.9.0.0/16 via 241.0.0.3 dev vx-test onlink mtu=1320
rule pref=4242 table=4242
`},
	}, ipv6Steps()...)
}

// runSequence applies each step to a fresh kernel from newKernel, first in order, then
// in random orders, and compares dumps; a second Apply of the same step must converge.
func runSequence(t *testing.T, newKernel func(t *testing.T) Kernel) {
	ctx := context.Background()
	check := func(t *testing.T, k Kernel, s step) {
		t.Helper()
		if err := Apply(ctx, k, testOwn, s.want); err != nil {
			t.Fatalf("step %q: apply: %v", s.name, err)
		}
		got, err := Dump(ctx, k, testOwn)
		if err != nil {
			t.Fatalf("step %q: dump: %v", s.name, err)
		}
		if got != s.dump {
			t.Fatalf("step %q:\ngot:\n%s\nwant:\n%s", s.name, got, s.dump)
		}
		if err := Apply(ctx, k, testOwn, s.want); err != nil {
			t.Fatalf("step %q: second apply: %v", s.name, err)
		}
		if again, _ := Dump(ctx, k, testOwn); again != got {
			t.Fatalf("step %q: second apply changed the state:\n%s", s.name, again)
		}
	}
	all := steps()
	t.Run("in order", func(t *testing.T) {
		k := newKernel(t)
		for _, s := range all {
			check(t, k, s)
		}
	})
	t.Run("random order", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		for round := 0; round < 3; round++ {
			k := newKernel(t)
			order := rng.Perm(len(all))
			var names []string
			for _, i := range order {
				names = append(names, all[i].name)
			}
			t.Logf("order: %s", strings.Join(names, " → "))
			for _, i := range order {
				check(t, k, all[i])
			}
			check(t, k, all[0]) // and back to nothing
		}
	})
}

func TestFakeSequence(t *testing.T) {
	runSequence(t, func(t *testing.T) Kernel {
		return NewFake(Link{Name: "eth0", Kind: "veth", MTU: 1500, Up: true, Addrs: []netip.Prefix{pfx("10.0.0.1/24"), pfx("2001:db8::1/64")}})
	})
}

func TestFakeConvergedApplyChangesNothing(t *testing.T) {
	ctx := context.Background()
	f := NewFake(Link{Name: "eth0", Kind: "veth", MTU: 1500, Up: true})
	want := steps()[2].want
	if err := Apply(ctx, f, testOwn, want); err != nil {
		t.Fatal(err)
	}
	n := f.Calls()
	if err := Apply(ctx, f, testOwn, want); err != nil {
		t.Fatal(err)
	}
	if f.Calls() != n {
		t.Fatalf("a converged Apply made %d changes", f.Calls()-n)
	}
}

func TestIntervalElements(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"10.0.0.0/16"}, "10.0.0.0/16"},
		{[]string{"10.1.0.0/16", "10.0.0.0/16"}, "10.0.0.0/15"},
		{[]string{"10.0.0.0/8", "10.2.0.0/16"}, "10.0.0.0/8"},
		{[]string{"10.7.0.0/16", "10.8.0.0/16"}, "10.7.0.0-10.8.255.255"},
		{[]string{"10.7.0.5/32", "10.9.0.0/16"}, "10.7.0.5 10.9.0.0/16"},
		{[]string{"0.0.0.0/0", "10.0.0.0/8"}, "0.0.0.0/0"},
	} {
		var ps []netip.Prefix
		for _, s := range tc.in {
			ps = append(ps, pfx(s))
		}
		var got []string
		for _, e := range IntervalElements(ps) {
			got = append(got, e.Key)
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("IntervalElements(%v) = %q, want %q", tc.in, g, tc.want)
		}
	}
}

func TestRuleWithNewExpressionsUnderTheSameTextIsRewritten(t *testing.T) {
	ctx := context.Background()
	f := NewFake()
	st := func(rule NFTRule) State {
		return State{NFT: &NFTable{Name: "strait-test", Chains: []NFTChain{{Name: "c", Type: "filter", Hook: "forward", Rules: []NFTRule{rule}}}}}
	}
	if err := Apply(ctx, f, testOwn, st(NFTRule{Text: "clamp", Exprs: []expr.Any{&expr.Counter{}}})); err != nil {
		t.Fatal(err)
	}
	n := f.Calls()
	fixed := NFTRule{Text: "clamp", Exprs: []expr.Any{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictAccept}}}
	if err := Apply(ctx, f, testOwn, st(fixed)); err != nil {
		t.Fatal(err)
	}
	if f.Calls() == n {
		t.Fatal("a rule with new expressions under the same text was left alone")
	}
	if d, _ := Dump(ctx, f, testOwn); !strings.Contains(d, "    clamp\n") {
		t.Fatalf("dump shows the rule as %q", d)
	}
}
