package topology

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Networks are the lab's own ranges beyond the ClusterSet's. In a lab file each may be
// pinned; "lab up" chooses the others (ChooseNetworks) and records them, so a running
// lab keeps its ranges whatever routes the host gains later.
type Networks struct {
	// LAN (at most a /16) holds every member's LAN, a /24 each from the second on, the
	// hub's address, and the hub's service (.253.0/24) and pod (.254.0/24) CIDRs.
	LAN string `json:"lan,omitempty"`
	// WAN (at most a /24) joins the routers, the gateway nodes and the internet namespace.
	WAN string `json:"wan,omitempty"`
	// Internet (at most a /24) holds the internet namespace's address and the host's link
	// into the lab.
	Internet string `json:"internet,omitempty"`
	// IPv6 (a /48 or larger of fc00::/7) holds every IPv6 address of a dual-stack lab
	// (layout in ipv6.go); empty in an IPv4 lab. The host routes all of it into the lab.
	IPv6 string `json:"ipv6,omitempty"`
}

// networkCandidates are the defaults for each network, tried in order: the first clear of
// the ClusterSet's ranges and of the host's routes, addresses and resolvers is taken. They
// come from private, shared (RFC 6598) and benchmarking (RFC 2544) space only. The
// documentation ranges are left out on purpose: a machine may reach real servers there
// through its default route (this project's machines reach their package mirror in
// 203.0.113.0/24), and a host route into the lab would take them away.
var networkCandidates = struct{ lan, wan, internet []string }{
	lan:      []string{"10.250.0.0/16", "10.251.0.0/16", "10.249.0.0/16", "10.248.0.0/16", "172.30.0.0/16", "172.29.0.0/16"},
	wan:      []string{"198.18.0.0/24", "198.18.16.0/24", "100.127.0.0/24", "100.126.0.0/24"},
	internet: []string{"198.18.1.0/24", "198.18.17.0/24", "100.127.1.0/24", "100.126.1.0/24"},
}

// HostRange is a route, an address or a resolver of the host's own network namespace.
// A lab range over it would be routed from the host into the lab and take host traffic
// there away from where it goes today.
type HostRange struct {
	Prefix netip.Prefix
	// What names it for an error, as ip(8) would show it ("route 192.0.2.0/24 dev eth0").
	What string
}

// pinnedRange is a range the lab routes that its input fixes: a ClusterSet CIDR or a
// network the lab file pins.
type pinnedRange struct {
	path   *field.Path
	prefix netip.Prefix
}

func (r pinnedRange) String() string { return r.path.String() + " " + r.prefix.String() }

// clusterSetRanges lists every range of the ClusterSet the lab routes: every pod and
// service CIDR (IPv6 ones only in a dual-stack lab, which Compute checks), pinned global
// CIDRs and, with globalnet on, the global range. Values that do not parse are left to
// Compute's and plan's checks.
func clusterSetRanges(cs *straitv1.ClusterSet) []pinnedRange {
	var out []pinnedRange
	add := func(fp *field.Path, s string) {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, pinnedRange{fp, p.Masked()})
		}
	}
	for i, c := range cs.Spec.Clusters {
		cp := field.NewPath("spec", "clusters").Index(i)
		for j, s := range c.PodCIDRs {
			add(cp.Child("podCIDRs").Index(j), s)
		}
		for j, s := range c.ServiceCIDRs {
			add(cp.Child("serviceCIDRs").Index(j), s)
		}
		if c.GlobalCIDR != "" {
			add(cp.Child("globalCIDR"), c.GlobalCIDR)
		}
	}
	if r, ok := globalRange(cs); ok {
		add(field.NewPath("spec", "globalnet", "cidrRange"), r)
	}
	return out
}

// globalRange is the globalnet range when globalnet is on.
func globalRange(cs *straitv1.ClusterSet) (string, bool) {
	g := cs.Spec.Globalnet
	if g == nil || !g.Enabled {
		return "", false
	}
	if g.CIDRRange == "" {
		return straitv1.DefaultGlobalCIDRRange, true
	}
	return g.CIDRRange, true
}

// hostOverlaps names the host ranges p overlaps. A default route is no range to avoid:
// it is where the lab must never send, and every range overlaps it.
func hostOverlaps(p netip.Prefix, host []HostRange) []string {
	var out []string
	for _, h := range host {
		if h.Prefix.Bits() > 0 && h.Prefix.Addr().Is4() == p.Addr().Is4() && h.Prefix.Overlaps(p) {
			out = append(out, h.What)
		}
	}
	return out
}

// ChooseNetworks returns the lab's networks: each one the lab file pins, checked, and
// for each other the first candidate clear of the ClusterSet's ranges, of the networks
// already chosen and of every host range. It refuses, naming the range and what it
// overlaps, a ClusterSet range or a pinned network over a host range, and a pinned
// network over a ClusterSet range or another network. host may be nil (Compute, which
// only recomputes a lab whose networks were chosen at "up"). ipv6 chooses the IPv6 range
// of a dual-stack lab too.
func ChooseNetworks(cs *straitv1.ClusterSet, pins Networks, host []HostRange, ipv6 bool) (Networks, field.ErrorList) {
	var errs field.ErrorList
	taken := clusterSetRanges(cs)
	for _, r := range taken {
		if over := hostOverlaps(r.prefix, host); len(over) > 0 {
			errs = append(errs, field.Invalid(r.path, r.prefix.String(),
				"overlaps the host's "+strings.Join(over, ", ")+": the lab would route it from the host into the lab"))
		}
	}
	np := field.NewPath("lab", "networks")
	var out Networks
	for _, n := range []struct {
		name       string
		pin        string
		maxBits    int
		candidates []string
		out        *string
	}{
		{"lan", pins.LAN, 16, networkCandidates.lan, &out.LAN},
		{"wan", pins.WAN, 24, networkCandidates.wan, &out.WAN},
		{"internet", pins.Internet, 24, networkCandidates.internet, &out.Internet},
	} {
		fp := np.Child(n.name)
		if n.pin != "" {
			p, err := checkPinnedNetwork(fp, n.pin, n.maxBits, taken, host)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			*n.out = p.String()
			taken = append(taken, pinnedRange{fp, p})
			continue
		}
		var tried []string
		for _, c := range n.candidates {
			p := netip.MustParsePrefix(c)
			var why []string
			for _, h := range hostOverlaps(p, host) {
				why = append(why, "the host's "+h)
			}
			for _, t := range taken {
				if t.prefix.Overlaps(p) {
					why = append(why, t.String())
				}
			}
			if len(why) == 0 {
				*n.out = c
				taken = append(taken, pinnedRange{fp, p})
				break
			}
			tried = append(tried, c+" overlaps "+strings.Join(why, ", "))
		}
		if *n.out == "" {
			errs = append(errs, field.Required(fp, "no default is clear ("+strings.Join(tried, "; ")+
				"): pin a free private range in the lab file"))
		}
	}
	if !ipv6 && pins.IPv6 != "" {
		errs = append(errs, field.Invalid(np.Child("ipv6"), pins.IPv6, "only a lab with IPv6 (ipFamilies: [IPv4, IPv6] or [IPv6]) has an IPv6 range"))
	}
	if ipv6 {
		r, err := chooseIPv6(pins.IPv6, host, taken)
		if err != nil {
			errs = append(errs, err)
		}
		out.IPv6 = r
	}
	return out, errs
}

// checkPinnedNetwork parses a network the lab file pins and refuses it when it is not a
// private IPv4 range of at most maxBits bits, or overlaps a range already taken or the host's.
func checkPinnedNetwork(fp *field.Path, s string, maxBits int, taken []pinnedRange, host []HostRange) (netip.Prefix, *field.Error) {
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		return p, field.Invalid(fp, s, err.Error())
	case !p.Addr().Is4():
		return p, field.Invalid(fp, s, "must be IPv4")
	case p.Masked() != p:
		return p, field.Invalid(fp, s, "has host bits set (want "+p.Masked().String()+")")
	case p.Bits() > maxBits:
		return p, field.Invalid(fp, s, fmt.Sprintf("too small: the lab needs a /%d or larger", maxBits))
	case !inLabRanges(p):
		return p, field.Invalid(fp, s, "outside the ranges a lab may use (private, shared, documentation, benchmarking or 240.0.0.0/4)")
	}
	return p, clearOf(fp, s, p, host, taken)
}

// clearOf refuses a pinned range p (written s) that overlaps the host's ranges or one
// already taken; nil when it is clear of them.
func clearOf(fp *field.Path, s string, p netip.Prefix, host []HostRange, taken []pinnedRange) *field.Error {
	if over := hostOverlaps(p, host); len(over) > 0 {
		return field.Invalid(fp, s, "overlaps the host's "+strings.Join(over, ", ")+": the lab would route it from the host into the lab")
	}
	for _, t := range taken {
		if t.prefix.Overlaps(p) {
			return field.Invalid(fp, s, "overlaps "+t.String())
		}
	}
	return nil
}
