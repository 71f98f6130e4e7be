package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Dump is a deterministic text rendering of everything of ours in k: owned links with
// their addresses, FDB entries and rp_filter, routes with our protocol, rules with our
// priority and our nftables tables (ip, then ip6). Tests compare it; people read it (`straitd agent
// --dump`).
func Dump(ctx context.Context, k Kernel, own Ownership) (string, error) {
	var b strings.Builder
	var errs []error
	links, err := k.Links(ctx)
	errs = append(errs, err)
	for _, l := range links {
		if !own.OwnsLink(l.Name) {
			continue
		}
		fmt.Fprintf(&b, "link %s %s", l.Name, l.Kind)
		if v := l.VXLAN; v != nil {
			fmt.Fprintf(&b, " vni=%d port=%d local=%s parent=%s", v.VNI, v.Port, v.Local, v.Parent)
		}
		fmt.Fprintf(&b, " mtu=%d", l.MTU)
		if l.MAC != "" {
			fmt.Fprintf(&b, " mac=%s", l.MAC)
		}
		if l.Up {
			b.WriteString(" up")
		}
		b.WriteString("\n")
		addrs := sortedStrings(l.Addrs)
		for _, a := range addrs {
			fmt.Fprintf(&b, "  addr %s\n", a)
		}
		for _, a := range sortedStrings(l.FDB) {
			fmt.Fprintf(&b, "  fdb %s\n", a)
		}
		neighbors := slices.SortedFunc(slices.Values(l.Neighbors), func(a, b Neighbor) int { return a.IP.Compare(b.IP) })
		for _, n := range neighbors {
			fmt.Fprintf(&b, "  neighbor %s lladdr %s\n", n.IP, n.MAC)
		}
		rp, err := k.Sysctl(ctx, "net/ipv4/conf/"+l.Name+"/rp_filter")
		errs = append(errs, err)
		fmt.Fprintf(&b, "  rp_filter=%s\n", rp)
	}
	routes, err := k.Routes(ctx, own.Protocol)
	errs = append(errs, err)
	var lines []string
	for _, r := range routes {
		lines = append(lines, "route "+r.String())
	}
	slices.Sort(lines)
	b.WriteString(joinLines(lines))
	rules, err := k.Rules(ctx)
	errs = append(errs, err)
	lines = nil
	for _, r := range rules {
		if r.Priority == own.RulePriority {
			lines = append(lines, "rule "+r.String())
		}
	}
	slices.Sort(lines)
	b.WriteString(joinLines(lines))
	for _, f := range []Family{IPv4, IPv6} {
		t, err := k.NFTable(ctx, f, own.NFTable)
		errs = append(errs, err)
		if t != nil {
			b.WriteString(t.String())
		}
	}
	return b.String(), errors.Join(errs...)
}

// String renders a rule as "pref=P table=T", with "ip6 " first for IPv6 (an IPv4 rule
// reads as it did before IPv6).
func (r Rule) String() string {
	s := fmt.Sprintf("pref=%d table=%d", r.Priority, r.Table)
	if r.Family.Or4() == IPv6 {
		s = "ip6 " + s
	}
	return s
}

// String renders a route like ip-route does, with the table and protocol first.
func (r Route) String() string {
	s := fmt.Sprintf("table=%d proto=%d %s", r.Table, r.Protocol, r.Dst)
	if r.Gw.IsValid() {
		s += " via " + r.Gw.String()
	}
	s += " dev " + r.Dev
	if r.Onlink {
		s += " onlink"
	}
	if r.Src.IsValid() {
		s += " src " + r.Src.String()
	}
	if r.MTU != 0 {
		s += fmt.Sprintf(" mtu=%d", r.MTU)
	}
	return s
}

// String renders the table with sorted sets, elements and chains; rules keep their order.
func (t *NFTable) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nft table %s %s\n", t.Family.Or4(), t.Name)
	sets := slices.Clone(t.Sets)
	slices.SortFunc(sets, func(a, b NFTSet) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range sets {
		fmt.Fprintf(&b, "  %s\n", s.header())
		var els []string
		for _, e := range s.Elements {
			if s.Value != "" {
				els = append(els, e.Key+" : "+e.Value)
			} else {
				els = append(els, e.Key)
			}
		}
		slices.Sort(els)
		for _, e := range els {
			fmt.Fprintf(&b, "    %s\n", e)
		}
	}
	chains := slices.Clone(t.Chains)
	slices.SortFunc(chains, func(a, b NFTChain) int { return strings.Compare(a.Name, b.Name) })
	for _, c := range chains {
		fmt.Fprintf(&b, "  %s\n", c.header())
		for _, r := range c.Rules {
			fmt.Fprintf(&b, "    %s\n", readableRule(r.Text))
		}
	}
	return b.String()
}

func (s NFTSet) header() string {
	h := "set " + s.Name + " " + s.Key
	if s.Value != "" {
		h = "map " + s.Name + " " + s.Key + " : " + s.Value
	}
	if s.Interval {
		h += " interval"
	}
	return h
}

func (c NFTChain) header() string {
	return fmt.Sprintf("chain %s type=%s hook=%s priority=%d", c.Name, c.Type, c.Hook, c.Priority)
}

func sortedStrings[T fmt.Stringer](in []T) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = v.String()
	}
	slices.Sort(out)
	return out
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}
