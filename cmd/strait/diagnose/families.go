package diagnose

import (
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/straitnet/strait/plan"
)

// familyOf is the IP family of an address or a CIDR ("" when it is neither).
func familyOf(s string) corev1.IPFamily {
	addr, err := netip.ParseAddr(s)
	if err != nil {
		p, perr := netip.ParsePrefix(s)
		if perr != nil {
			return ""
		}
		addr = p.Addr()
	}
	if addr.Unmap().Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// families are the IP families a member carries: its pod ranges' in the Membership
// (a cluster's families are its pod ranges'), IPv4 first.
func (m *member) families() []corev1.IPFamily {
	if m.membership == nil {
		return nil
	}
	var out []corev1.IPFamily
	fs := plan.FamiliesOf(m.membership.Spec.PodCIDRs)
	if fs.V4 {
		out = append(out, corev1.IPv4Protocol)
	}
	if fs.V6 {
		out = append(out, corev1.IPv6Protocol)
	}
	return out
}

// sharedFamilies are the families two members connect in: those both carry.
func sharedFamilies(a, b *member) []corev1.IPFamily {
	var out []corev1.IPFamily
	for _, f := range a.families() {
		if slices.Contains(b.families(), f) {
			out = append(out, f)
		}
	}
	return out
}

// ipOf is the pod's address of family f, "" without one.
func (p probePod) ipOf(f corev1.IPFamily) string {
	for _, ip := range append([]string{p.ip}, p.ips...) {
		if familyOf(ip) == f {
			return ip
		}
	}
	return ""
}

// inFamily is the pod as seen in family f: its ip that family's.
func (p probePod) inFamily(f corev1.IPFamily) (probePod, bool) {
	ip := p.ipOf(f)
	p.ip = ip
	return p, ip != ""
}

// nftFamily is nftables' name of the family of the agent's tables for f.
func nftFamily(f corev1.IPFamily) string {
	if f == corev1.IPv6Protocol {
		return "ip6"
	}
	return "ip"
}

// labelled says which family a part of a check's detail is about: "IPv6: ...". A
// member of IPv4 alone keeps its details as they were, without the word.
func labelled(m *member, f corev1.IPFamily, detail string) string {
	if fs := m.families(); len(fs) <= 1 && f != corev1.IPv6Protocol {
		return detail
	}
	return string(f) + ": " + detail
}

// joinDetails joins the details of a check's parts.
func joinDetails(parts []string) string { return strings.Join(parts, "; ") }
