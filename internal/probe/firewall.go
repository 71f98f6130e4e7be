package probe

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
	"golang.org/x/sys/unix"
)

// Fence is a gateway fence's table in one family as a node holds it: the ports its set
// "term" holds now. UDP to the cable's port passes while the set holds it and is
// dropped when it does not (the agent's term ran out, or it is a standby).
type Fence struct {
	Family string `json:"family"` // ip, ip6
	Ports  []int  `json:"ports"`
}

// Drop is a rule that drops or rejects UDP to one of the ports asked about, in any
// table of family ip, ip6 or inet (nft's own, iptables-nft's and ip6tables-nft's
// tables alike): the rule's table, chain, handle and port. Rules of legacy iptables
// (x_tables, not nftables) are not seen.
type Drop struct {
	Family  string `json:"family"` // ip, ip6, inet
	Table   string `json:"table"`
	Chain   string `json:"chain"`
	Handle  uint64 `json:"handle"`
	Port    int    `json:"port"`
	Verdict string `json:"verdict"` // drop, reject
}

// familyName is nft's word for a table's family; "" for the families that carry no IP
// traffic of their own here (arp, bridge, netdev).
func familyName(f nftables.TableFamily) string {
	switch f {
	case nftables.TableFamilyIPv4:
		return "ip"
	case nftables.TableFamilyIPv6:
		return "ip6"
	case nftables.TableFamilyINet:
		return "inet"
	}
	return ""
}

// firewall reads the fence tables (fenceTable, ip and ip6) and every rule of the other
// ip, ip6 and inet tables that drops UDP to one of ports.
func firewall(c *nftables.Conn, fenceTable string, ports []int) ([]Fence, []Drop, error) {
	tables, err := c.ListTables()
	if err != nil {
		return nil, nil, fmt.Errorf("listing nftables tables: %w", err)
	}
	chains, err := c.ListChains()
	if err != nil {
		return nil, nil, fmt.Errorf("listing nftables chains: %w", err)
	}
	var fences []Fence
	var drops []Drop
	for _, t := range tables {
		fam := familyName(t.Family)
		switch {
		case fam == "":
		case t.Name == fenceTable && fam != "inet":
			f := Fence{Family: fam, Ports: []int{}}
			sets, err := c.GetSets(t)
			if err != nil {
				return nil, nil, fmt.Errorf("the sets of table %s %s: %w", fam, t.Name, err)
			}
			for _, s := range sets {
				if s.Name != fenceSetName {
					continue
				}
				elems, err := c.GetSetElements(s)
				if err != nil {
					return nil, nil, fmt.Errorf("set %s of table %s %s: %w", s.Name, fam, t.Name, err)
				}
				for _, e := range elems {
					if len(e.Key) == 2 {
						f.Ports = append(f.Ports, int(binary.BigEndian.Uint16(e.Key)))
					}
				}
			}
			sort.Ints(f.Ports)
			fences = append(fences, f)
		case len(ports) > 0:
			for _, ch := range chains {
				if ch.Table == nil || ch.Table.Name != t.Name || ch.Table.Family != t.Family {
					continue
				}
				rules, err := c.GetRules(t, ch)
				if err != nil {
					return nil, nil, fmt.Errorf("the rules of chain %s of table %s %s: %w", ch.Name, fam, t.Name, err)
				}
				for _, r := range rules {
					if port, verdict, ok := DropsUDP(r.Exprs, t.Family, ports); ok {
						drops = append(drops, Drop{Family: fam, Table: t.Name, Chain: ch.Name, Handle: r.Handle, Port: port, Verdict: verdict})
					}
				}
			}
		}
	}
	sort.Slice(fences, func(i, j int) bool { return fences[i].Family < fences[j].Family })
	return fences, drops, nil
}

// fenceSetName is the fence's set (nodeagent/kernel's "term").
const fenceSetName = "term"

// DropsUDP says whether a rule's expressions drop or reject UDP to one of ports, and
// which: a destination port matched equal (nft's "udp dport P", "th dport P", a range
// holding P, iptables-nft's "-p udp --dport P") with no other protocol than UDP asked
// for, and a drop or reject verdict. A rule that looks the port up in a set, or matches
// it unequal, is not judged (it lets the port through, or cannot be told from here).
func DropsUDP(exprs []expr.Any, family nftables.TableFamily, ports []int) (int, string, bool) {
	want := map[int]bool{}
	for _, p := range ports {
		want[p] = true
	}
	const (
		loadedOther = iota
		loadedProto
		loadedDport
	)
	loaded := map[uint32]int{}
	port, verdict := 0, ""
	for _, e := range exprs {
		switch x := e.(type) {
		case *expr.Meta:
			if x.Key == expr.MetaKeyL4PROTO {
				loaded[x.Register] = loadedProto
			} else {
				loaded[x.Register] = loadedOther
			}
		case *expr.Payload:
			switch {
			case x.Base == expr.PayloadBaseTransportHeader && x.Offset == 2 && x.Len == 2:
				loaded[x.DestRegister] = loadedDport
			case x.Base == expr.PayloadBaseNetworkHeader && x.Len == 1 &&
				(family == nftables.TableFamilyIPv4 && x.Offset == 9 || family == nftables.TableFamilyIPv6 && x.Offset == 6):
				loaded[x.DestRegister] = loadedProto // ip protocol, ip6 nexthdr
			default:
				loaded[x.DestRegister] = loadedOther
			}
		case *expr.Cmp:
			switch loaded[x.Register] {
			case loadedProto:
				if len(x.Data) != 1 || (x.Op == expr.CmpOpEq) != (x.Data[0] == unix.IPPROTO_UDP) {
					return 0, "", false // another protocol than UDP
				}
			case loadedDport:
				if x.Op != expr.CmpOpEq || len(x.Data) != 2 || !want[int(binary.BigEndian.Uint16(x.Data))] {
					return 0, "", false
				}
				port = int(binary.BigEndian.Uint16(x.Data))
			}
		case *expr.Range:
			if loaded[x.Register] != loadedDport {
				continue
			}
			if x.Op != expr.CmpOpEq || len(x.FromData) != 2 || len(x.ToData) != 2 {
				return 0, "", false
			}
			from, to := int(binary.BigEndian.Uint16(x.FromData)), int(binary.BigEndian.Uint16(x.ToData))
			if port = inRange(ports, from, to); port == 0 {
				return 0, "", false
			}
		case *expr.Lookup:
			if loaded[x.SourceRegister] == loadedDport {
				return 0, "", false
			}
		case *expr.Match:
			switch info := x.Info.(type) {
			case *xt.Udp:
				if info.InvFlags&xt.UdpInvDestPorts != 0 {
					return 0, "", false
				}
				if port = inRange(ports, int(info.DstPorts[0]), int(info.DstPorts[1])); port == 0 {
					return 0, "", false
				}
			case *xt.Tcp:
				return 0, "", false
			}
		case *expr.Verdict:
			switch x.Kind {
			case expr.VerdictDrop:
				verdict = "drop"
			default:
				return 0, "", false // accept, jump, return: not this rule's drop
			}
		case *expr.Reject:
			verdict = "reject"
		case *expr.Target:
			if x.Name == "REJECT" || x.Name == "DROP" {
				verdict = "reject"
			}
		}
	}
	return port, verdict, port != 0 && verdict != ""
}

// inRange is the first of ports within [from, to], 0 for none.
func inRange(ports []int, from, to int) int {
	for _, p := range ports {
		if p >= from && p <= to {
			return p
		}
	}
	return 0
}

// legacyTables are the tables of legacy iptables and ip6tables (x_tables, not nftables)
// the node's kernel holds, read from procNet (/proc/net): "ip filter", "ip6 nat"...
// Their rules are not read; a node that has them may drop what no nftables rule shows.
func legacyTables(procNet string) []string {
	var out []string
	for _, f := range []struct{ file, family string }{{"ip_tables_names", "ip"}, {"ip6_tables_names", "ip6"}} {
		data, err := os.ReadFile(filepath.Join(procNet, f.file))
		if err != nil {
			continue // no x_tables module loaded: no legacy table
		}
		for _, name := range strings.Fields(string(data)) {
			out = append(out, f.family+" "+name)
		}
	}
	sort.Strings(out)
	return out
}
