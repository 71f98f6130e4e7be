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
	// NFTable is our nftables table (family ip).
	NFTable string
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
	// NFT is our nftables table; nil for none.
	NFT *NFTable
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
	// Addrs on the link.
	Addrs []netip.Prefix
	// FDB holds the remote VTEPs of a VXLAN device (all-zero MAC entries: every
	// unknown destination is sent to each of them).
	FDB []netip.Addr
	// MAC is the link's hardware address in net.HardwareAddr's form; "" leaves the
	// kernel's (random) one.
	MAC string
	// Neighbors are permanent IPv4 neighbor entries on the link (a VXLAN device's peers:
	// no ARP, so a peer's next packet finds the right MAC at once).
	Neighbors []Neighbor
}

// Neighbor is a permanent IPv4 neighbor entry.
type Neighbor struct {
	IP netip.Addr
	// MAC in net.HardwareAddr's form (lower case).
	MAC string
}

// VXLAN are a VXLAN device's parameters.
type VXLAN struct {
	VNI  int
	Port int
	// Local is the underlay source address.
	Local netip.Addr
	// Parent is the underlay device.
	Parent string
}

// Route is an IPv4 route.
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

// Rule is an IPv4 policy rule "from all lookup Table" at Priority.
type Rule struct {
	Priority int
	Table    int
}

// NFTable is an nftables table of family ip.
type NFTable struct {
	Name   string
	Sets   []NFTSet
	Chains []NFTChain
}

// NFTSet is a named set, or a map when Value is set.
type NFTSet struct {
	Name string
	// Key type as nft prints it: "ipv4_addr", "integer", "mark", "inet_service", or a
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

// ID is Text with a short hash of the expressions, so a rule whose expressions change
// under the same text is still rewritten.
func (r NFTRule) ID() string {
	h := sha256.New()
	for _, e := range r.Exprs {
		b, err := expr.Marshal(byte(unix.NFPROTO_IPV4), e)
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
