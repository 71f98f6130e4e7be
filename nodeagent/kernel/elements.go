package kernel

import (
	"net/netip"
	"slices"
)

// IntervalElements is the canonical element list of an interval set of type ipv4_addr
// holding the IPv4 prefixes of ps (the others are left out): overlapping and adjacent
// prefixes merged, sorted, each rendered by RangeText. The kernel refuses overlapping
// intervals, and reading merged ranges back gives the same text, so Apply sees no
// difference on the next pass.
func IntervalElements(ps []netip.Prefix) []NFTElement { return IntervalElementsOf(IPv4, ps) }

// IntervalElementsOf is IntervalElements for the prefixes of family f (an ipv6_addr set
// for IPv6).
func IntervalElementsOf(f Family, ps []netip.Prefix) []NFTElement {
	type span struct{ first, last netip.Addr }
	var spans []span
	for _, p := range ps {
		if !p.IsValid() || FamilyOf(p.Addr()) != f.Or4() || p.Addr().Is4In6() {
			continue
		}
		p = p.Masked()
		spans = append(spans, span{p.Addr(), LastAddr(p)})
	}
	slices.SortFunc(spans, func(a, b span) int { return a.first.Compare(b.first) })
	var merged []span
	for _, s := range spans {
		if n := len(merged); n > 0 {
			prev := &merged[n-1]
			next := prev.last.Next()
			if !next.IsValid() || !next.Less(s.first) { // overlapping or adjacent
				if prev.last.Less(s.last) {
					prev.last = s.last
				}
				continue
			}
		}
		merged = append(merged, s)
	}
	out := make([]NFTElement, len(merged))
	for i, s := range merged {
		out[i] = NFTElement{Key: RangeText(s.first, s.last)}
	}
	return out
}

// LastAddr is the last address of p, in p's family.
func LastAddr(p netip.Prefix) netip.Addr {
	p = p.Masked()
	b := p.Addr().AsSlice()
	for i := range b {
		if keep := p.Bits() - 8*i; keep < 8 {
			b[i] |= 0xff >> max(keep, 0)
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
