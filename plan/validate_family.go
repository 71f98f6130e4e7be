package plan

import (
	"fmt"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Families is a set of address families: which of IPv4 and IPv6 a cluster's ranges hold.
type Families struct{ V4, V6 bool }

// FamiliesOf are the families of the CIDRs given; unparsable entries count for none.
func FamiliesOf(cidrs []string) Families {
	var f Families
	for _, s := range cidrs {
		if p, err := netip.ParsePrefix(s); err == nil {
			f.add(p.Addr())
		}
	}
	return f
}

func (f *Families) add(a netip.Addr) {
	if a.Is4() || a.Is4In6() {
		f.V4 = true
	} else if a.Is6() {
		f.V6 = true
	}
}

// Shares says whether f and g have a family in common.
func (f Families) Shares(g Families) bool { return f.V4 && g.V4 || f.V6 && g.V6 }

// Covers says whether every family of g is one of f's.
func (f Families) Covers(g Families) bool { return (f.V4 || !g.V4) && (f.V6 || !g.V6) }

// String is how errors name a set of families: "IPv4 only", "IPv6 only", "dual-stack".
func (f Families) String() string {
	switch {
	case f.V4 && f.V6:
		return "dual-stack"
	case f.V6:
		return "IPv6 only"
	case f.V4:
		return "IPv4 only"
	}
	return "no family"
}

// validateFamilies checks what the address families of the clusters allow. A cluster's
// families are its pod CIDRs': a service range of a family its pods lack has no
// endpoints to reach. Two clusters connect in the families they share, so an IPv4-only
// and an IPv6-only member would be members that cannot reach each other. Globalnet
// translates IPv4 alone: an IPv6-only member has nothing it could translate, and a
// dual-stack member's IPv6 ranges are routed as they are, so they must not overlap
// another cluster's (overlapsInFamily).
func validateFamilies(spec *straitv1.ClusterSetSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	firstOnly := map[bool]int{} // V6 → index of the first cluster of that one family alone
	for i := range spec.Clusters {
		c := &spec.Clusters[i]
		pods, svcs := FamiliesOf(c.PodCIDRs), FamiliesOf(c.ServiceCIDRs)
		if pods == (Families{}) {
			continue // validateCIDRList has said why
		}
		if !pods.Covers(svcs) {
			errs = append(errs, field.Invalid(path.Index(i).Child("serviceCIDRs"), c.ServiceCIDRs, fmt.Sprintf(
				"cluster %s lists service CIDRs of a family its podCIDRs %v lack (pods %s, services %s): a service's endpoints are pods of its family; add the pod range or remove the service range",
				c.Name, c.PodCIDRs, pods, svcs)))
		}
		if pods.V4 != pods.V6 {
			if _, seen := firstOnly[pods.V6]; !seen {
				firstOnly[pods.V6] = i
			}
		}
		if GlobalnetEnabled(spec) && !pods.V4 {
			errs = append(errs, field.Invalid(path.Index(i).Child("podCIDRs"), c.PodCIDRs, fmt.Sprintf(
				"cluster %s is IPv6 only, but globalnet translates IPv4 only: give the cluster its IPv4 ranges too (dual-stack), or disable spec.globalnet",
				c.Name)))
		}
	}
	v4, okV4 := firstOnly[false]
	if _, okV6 := firstOnly[true]; okV4 && okV6 {
		for i := range spec.Clusters {
			c := &spec.Clusters[i]
			if f := FamiliesOf(c.PodCIDRs); f.V6 && !f.V4 {
				errs = append(errs, field.Invalid(path.Index(i).Child("podCIDRs"), c.PodCIDRs, fmt.Sprintf(
					"clusters %s (IPv4 only) and %s (IPv6 only) share no address family, so they cannot connect: make one of them dual-stack",
					spec.Clusters[v4].Name, c.Name)))
			}
		}
	}
	return errs
}

// inFamily are the prefixes of one family: IPv6 or IPv4.
func inFamily(prefixes []namedPrefix, v6 bool) []namedPrefix {
	var of []namedPrefix
	for _, p := range prefixes {
		if p.prefix.Addr().Is6() == v6 {
			of = append(of, p)
		}
	}
	return of
}

// ipv6Carried says whether this version's node agents route and tunnel IPv6. Until they
// do, Validate refuses IPv6 ranges and gateway addresses (ipv6NotCarriedYet), and
// strait join leaves out the IPv6 ranges it observes.
const ipv6Carried = true

// Carried says whether this version's data path carries the prefix's family.
func Carried(p netip.Prefix) bool { return p.Addr().Is4() || ipv6Carried }

// ipv6NotCarriedYet refuses every IPv6 range and gateway address (that is not refused
// for another reason already) while the node agents
// of this version route IPv4 alone: the API and the validation take both families, the
// data path does not yet, and an accepted range it ignored would be a silent black hole.
func ipv6NotCarriedYet(spec *straitv1.ClusterSetSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	const why = "IPv6 is not carried yet: this version's node agents route and tunnel IPv4 only; list the cluster's IPv4 ranges alone"
	for i := range spec.Clusters {
		c := &spec.Clusters[i]
		for _, kc := range []struct {
			kind  string
			cidrs []string
		}{{"podCIDRs", c.PodCIDRs}, {"serviceCIDRs", c.ServiceCIDRs}} {
			for k, s := range kc.cidrs {
				if p, err := netip.ParsePrefix(s); err != nil || !p.Addr().Is6() {
					continue
				}
				at := path.Index(i).Child(kc.kind).Index(k)
				if _, err := routableCIDR(at, s, ""); err == nil {
					errs = append(errs, field.Invalid(at, s, why))
				}
			}
		}
		ep := c.Gateway.Endpoint
		if ep == nil {
			continue
		}
		gatewayV6 := func(addr string, at func() *field.Path) {
			if ip, err := netip.ParseAddr(addr); err == nil && ip.Is6() && len(validatePublicAddress(addr, at())) == 0 {
				errs = append(errs, field.Invalid(at(), addr, "IPv6 is not carried yet: this version's gateways tunnel over IPv4 only"))
			}
		}
		gatewayV6(ep.Address, func() *field.Path { return path.Index(i).Child("gateway", "endpoint", "address") })
		for k, na := range ep.NodeAddresses {
			gatewayV6(na.Address, func() *field.Path {
				return path.Index(i).Child("gateway", "endpoint", "nodeAddresses").Index(k).Child("address")
			})
		}
	}
	return errs
}
