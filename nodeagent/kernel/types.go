package kernel

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
	"net/netip"
)

// Ownership says what on a node is ours: Apply and Cleanup touch nothing else.
type Ownership struct {
	// LinkNames are the devices we create (e.g. "vx-strait").
	LinkNames []string
	// Table is our routing table.
	Table int
	// Protocol marks every route we add.
	Protocol int
	// RulePriority of our policy rules.
	RulePriority int
	// NFTable is our nftables table's name, in both families: table ip NFTable and
	// table ip6 NFTable are ours.
	NFTable string
}

// Family is an address family as nftables names it: "ip" or "ip6".
type Family string

// The two families; the zero Family is IPv4, so that what was written before IPv6 keeps
// its meaning.
const (
	IPv4 Family = "ip"
	IPv6 Family = "ip6"
)

// FamilyOf is the family of a.
func FamilyOf(a netip.Addr) Family {
	if a.Is4() || a.Is4In6() {
		return IPv4
	}
	return IPv6
}

// Or4 is f, or IPv4 for the zero Family.
func (f Family) Or4() Family {
	if f == "" {
		return IPv4
	}
	return f
}

// nfproto is the family's netfilter protocol number.
func (f Family) nfproto() byte {
	if f.Or4() == IPv6 {
		return unix.NFPROTO_IPV6
	}
	return unix.NFPROTO_IPV4
}

// OwnsLink says whether the device name is ours.
func (o Ownership) OwnsLink(name string) bool {
	for _, n := range o.LinkNames {
		if n == name {
			return true
		}
	}
	return false
}

// State is the whole kernel state the agent wants on one node.
type State struct {
	// Links we own, with their addresses and FDB entries.
	Links []Link
	// Routes, all in our table with our protocol.
	Routes []Route
	// Rules with our priority.
	Rules []Rule
	// Sysctls by key under /proc/sys ("net/ipv4/conf/vx-strait/rp_filter").
	Sysctls map[string]string
	// NFT is our nftables table of family ip; nil for none.
	NFT *NFTable
	// NFT6 is our nftables table of family ip6 (the same name); nil for none, so a node
	// with no IPv6 to handle has no ip6 table.
	NFT6 *NFTable
}

// Link is a network device.
type Link struct {
	Name string
	// Kind is the netlink kind: "vxlan" for ours; others are read-only to us.
	Kind string
	MTU  int
	Up   bool
	// VXLAN parameters when Kind is "vxlan".
	VXLAN *VXLAN
	// Addrs on the link, IPv4 and IPv6 (not the IPv6 link-local ones the kernel makes
	// itself). IPv6 addresses are added without duplicate address detection, so they
	// work at once: a failover must not wait for DAD.
	Addrs []netip.Prefix
	// FDB holds the remote VTEPs (IPv4 or IPv6 underlay addresses) of a VXLAN device (all-zero MAC entries: every
	// unknown destination is sent to each of them).
	FDB []netip.Addr
	// MAC is the link's hardware address in net.HardwareAddr's form; "" leaves the
	// kernel's (random) one.
	MAC string
	// Neighbors are permanent neighbor entries on the link, IPv4 (ARP) or IPv6 (NDP): a
	// VXLAN device's peers, so that a peer's next packet finds the right MAC at once.
	Neighbors []Neighbor
}

// Neighbor is a permanent neighbor entry, IPv4 or IPv6.
type Neighbor struct {
	IP netip.Addr
	// MAC in net.HardwareAddr's form (lower case).
	MAC string
}

// VXLAN are a VXLAN device's parameters.
type VXLAN struct {
	VNI  int
	Port int
	// Local is the underlay source address, IPv4 or IPv6 (VXLAN over IPv6).
	Local netip.Addr
	// Parent is the underlay device.
	Parent string
}

// Route is a route; its family is Dst's (Gw and Src are of the same family).
type Route struct {
	Table    int
	Protocol int
	Dst      netip.Prefix
	Dev      string
	// Gw is the next hop; invalid for a device route.
	Gw netip.Addr
	// Onlink: the next hop is reachable on Dev without a covering prefix.
	Onlink bool
	// Src is the preferred source; invalid for none.
	Src netip.Addr
	// MTU of the route; 0 for the device's.
	MTU int
}

// Rule is a policy rule "from all lookup Table" at Priority, in one family.
type Rule struct {
	Priority int
	Table    int
	// Family is IPv4 or IPv6; the zero Family is IPv4.
	Family Family
}

// Family is the route's family, Dst's.
func (r Route) Family() Family { return FamilyOf(r.Dst.Addr()) }

// NFTable is an nftables table of family ip or ip6.
type NFTable struct {
	Name string
	// Family is IPv4 or IPv6; the zero Family is IPv4. State.NFT is of family ip and
	// State.NFT6 of family ip6 whatever this says: Apply sets it.
	Family Family
	Sets   []NFTSet
	Chains []NFTChain
}

// NFTSet is a named set, or a map when Value is set.
type NFTSet struct {
	Name string
	// Key type as nft prints it: "ipv4_addr", "ipv6_addr", "integer", "mark", "inet_service", or a
	// concatenation of them such as "ipv4_addr . mark".
	Key string
	// Value type of a map ("ipv4_addr"); "" for a set.
	Value string
	// Interval sets hold prefixes.
	Interval bool
	// Elements in their text form: "10.0.0.0/16", "242.1.0.5 . 3", with Value
	// "10.7.1.4" for maps.
	Elements []NFTElement
}

// NFTElement is one set element or map entry in text form.
type NFTElement struct {
	Key   string
	Value string
}

// NFTChain is a base chain.
type NFTChain struct {
	Name string
	// Type: "nat" or "filter".
	Type string
	// Hook: "prerouting", "input", "forward", "output", "postrouting".
	Hook     string
	Priority int
	Rules    []NFTRule
}

// NFTRule is one rule: Text is how people read it, Exprs what the Linux implementation
// sends; a rule builder writes both side by side. The kernel keeps ID() as the rule's
// comment, and a rule read back carries that ID as its Text.
type NFTRule struct {
	Text  string
	Exprs []expr.Any
}

// ID is Text with a short hash of the expressions as marshalled for a table of family
// f, so a rule whose expressions change under the same text is still rewritten.
func (r NFTRule) ID(f Family) string {
	h := sha256.New()
	for _, e := range r.Exprs {
		b, err := expr.Marshal(f.nfproto(), e)
		if err != nil {
			fmt.Fprintf(h, "%T%+v", e, e)
		}
		h.Write(b)
	}
	return r.Text + " #" + hex.EncodeToString(h.Sum(nil)[:4])
}

// readableRule drops the hash of an ID.
func readableRule(id string) string {
	if i := strings.LastIndex(id, " #"); i >= 0 && len(id)-i == 10 {
		return id[:i]
	}
	return id
}
