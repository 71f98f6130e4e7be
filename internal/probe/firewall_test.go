package probe

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
	"golang.org/x/sys/unix"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/require"
)

func port(p int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(p)) }

// TestDropsUDPReadsWhatARuleDrops: the rule forms nft and iptables-nft write for a
// dropped UDP port, and those that drop something else or let the port through.
func TestDropsUDPReadsWhatARuleDrops(t *testing.T) {
	l4 := func(proto byte) []expr.Any {
		return []expr.Any{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}}}
	}
	dport := []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}}
	rule := func(parts ...[]expr.Any) []expr.Any { return slices.Concat(parts...) }
	drop := []expr.Any{&expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop}}
	for _, tc := range []struct {
		name    string
		family  nftables.TableFamily
		exprs   []expr.Any
		port    int
		verdict string
	}{
		{"udp dport 51871 drop", nftables.TableFamilyINet, rule(l4(unix.IPPROTO_UDP), dport, []expr.Any{&expr.Cmp{Register: 1, Data: port(51871)}}, drop), 51871, "drop"},
		{"ip6 nexthdr udp udp dport 4804 reject", nftables.TableFamilyIPv6, rule([]expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 6, Len: 1}, &expr.Cmp{Register: 1, Data: []byte{unix.IPPROTO_UDP}}},
			dport, []expr.Any{&expr.Cmp{Register: 1, Data: port(4804)}, &expr.Reject{}}), 4804, "reject"},
		{"th dport 51000-52000 drop", nftables.TableFamilyIPv4, rule(dport, []expr.Any{&expr.Range{Register: 1, FromData: port(51000), ToData: port(52000)}}, drop), 51871, "drop"},
		{"ip6tables -p udp --dport 51871 -j REJECT", nftables.TableFamilyIPv6, rule(l4(unix.IPPROTO_UDP),
			[]expr.Any{&expr.Match{Name: "udp", Info: &xt.Udp{SrcPorts: [2]uint16{0, 65535}, DstPorts: [2]uint16{51871, 51871}}}, &expr.Target{Name: "REJECT"}}), 51871, "reject"},
		{"another port", nftables.TableFamilyINet, rule(l4(unix.IPPROTO_UDP), dport, []expr.Any{&expr.Cmp{Register: 1, Data: port(53)}}, drop), 0, ""},
		{"tcp dport 51871 drop", nftables.TableFamilyINet, rule(l4(unix.IPPROTO_TCP), dport, []expr.Any{&expr.Cmp{Register: 1, Data: port(51871)}}, drop), 0, ""},
		{"udp dport 51871 accept", nftables.TableFamilyINet, rule(l4(unix.IPPROTO_UDP), dport, []expr.Any{&expr.Cmp{Register: 1, Data: port(51871)}, &expr.Verdict{Kind: expr.VerdictAccept}}), 0, ""},
		{"udp dport != 51871 drop", nftables.TableFamilyINet, rule(l4(unix.IPPROTO_UDP), dport, []expr.Any{&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: port(51871)}}, drop), 0, ""},
		{"the fence: udp dport 51871 udp dport != @term drop", nftables.TableFamilyIPv4, rule(l4(unix.IPPROTO_UDP), dport,
			[]expr.Any{&expr.Cmp{Register: 1, Data: port(51871)}, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
				&expr.Lookup{SourceRegister: 1, SetName: "term", Invert: true}}, drop), 0, ""},
	} {
		p, v, ok := DropsUDP(tc.exprs, tc.family, []int{51871, 4804})
		if p != tc.port || v != tc.verdict || ok != (tc.port != 0) {
			t.Errorf("%s: port %d verdict %q ok %v, want %d %q", tc.name, p, v, ok, tc.port, tc.verdict)
		}
	}
}

// TestFirewallReadsTheFencesAndTheDropsOfBothFamilies, in a fresh namespace: the fence
// tables as the agent writes them (ip holding the port, ip6 empty: fenced off), and
// drops of the cable's port by nft in an ip6 table and by ip6tables-nft, beside a rule
// for another port.
func TestFirewallReadsTheFencesAndTheDropsOfBothFamilies(t *testing.T) {
	require.Root(t, "nft", "ip6tables")
	ns := netns.New(t, "pfw")
	ruleset := `
add table ip strait-fence
add set ip strait-fence term { type inet_service; flags timeout; }
add chain ip strait-fence input { type filter hook input priority -300; }
add rule ip strait-fence input udp dport 51871 udp dport != @term counter drop
add element ip strait-fence term { 51871 timeout 1h }
add table ip6 strait-fence
add set ip6 strait-fence term { type inet_service; flags timeout; }
add chain ip6 strait-fence input { type filter hook input priority -300; }
add rule ip6 strait-fence input udp dport 51871 udp dport != @term counter drop
add table ip6 site
add chain ip6 site input { type filter hook input priority filter; }
add rule ip6 site input udp dport 51871 counter drop
add rule ip6 site input udp dport 53 counter drop
add table inet site
add chain inet site forward { type filter hook forward priority filter; }
add rule inet site forward udp dport 4804 reject
`
	if _, err := netns.Exec(context.Background(), ns.Name, ruleset, "nft", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	c, err := nftables.New(nftables.WithNetNSFd(ns.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	fences, drops, err := firewall(c, "strait-fence", []int{51871, 4804})
	if err != nil {
		t.Fatal(err)
	}
	wantFences := []Fence{{Family: "ip", Ports: []int{51871}}, {Family: "ip6", Ports: []int{}}}
	if !slices.EqualFunc(fences, wantFences, func(a, b Fence) bool { return a.Family == b.Family && slices.Equal(a.Ports, b.Ports) }) {
		t.Errorf("fences %+v, want %+v", fences, wantFences)
	}
	has := func(fam, table, chain string, port int, verdict string) bool {
		return slices.ContainsFunc(drops, func(d Drop) bool {
			return d.Family == fam && d.Table == table && d.Chain == chain && d.Port == port && d.Verdict == verdict
		})
	}
	if len(drops) != 2 || !has("ip6", "site", "input", 51871, "drop") || !has("inet", "site", "forward", 4804, "reject") {
		t.Errorf("drops %+v, want ip6 site input 51871 drop and inet site forward 4804 reject", drops)
	}
	if _, err := netns.Exec(context.Background(), ns.Name, "", "ip6tables", "-A", "INPUT", "-p", "udp", "--dport", "51871", "-j", "REJECT"); err != nil {
		t.Fatalf("ip6tables: %v", err)
	}
	if _, drops, err = firewall(c, "strait-fence", []int{51871}); err != nil {
		t.Fatal(err)
	}
	if !has("ip6", "filter", "INPUT", 51871, "reject") {
		t.Errorf("drops %+v, want ip6tables' ip6 filter INPUT 51871 reject", drops)
	}
}

// TestLegacyTablesAreNamed: the tables of legacy iptables and ip6tables a kernel lists.
func TestLegacyTablesAreNamed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ip_tables_names"), []byte("nat\nfilter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ip6_tables_names"), []byte("filter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := legacyTables(dir); !slices.Equal(got, []string{"ip filter", "ip nat", "ip6 filter"}) {
		t.Errorf("legacy tables %q", got)
	}
	if got := legacyTables(filepath.Join(dir, "none")); len(got) != 0 {
		t.Errorf("no x_tables: %q", got)
	}
}
