package plan

import (
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// view is what a member can take of the imports: the families of its pod ranges (the
// endpoints it can reach) and of its service ranges (the clusterset IPs its API server
// can allocate). Members of one view hold the same objects of an export they do not
// export, so the digests are computed once per view (a ClusterSet of one family has
// one).
type view struct{ pods, services Families }

// viewOf is cluster's view, from its ranges in the spec.
func viewOf(pods, services []string) view {
	return view{pods: FamiliesOf(pods), services: FamiliesOf(services)}
}

// Has says whether the set holds IPv6 (v6) or IPv4.
func (f Families) Has(v6 bool) bool {
	if v6 {
		return f.V6
	}
	return f.V4
}

// isV6 says whether an address, written as text, is IPv6 (IPv4-mapped ones are IPv4).
func isV6(ip string) bool {
	if strings.IndexByte(ip, ':') < 0 { // the digests ask per endpoint: no parse for IPv4
		return false
	}
	a, err := netip.ParseAddr(ip)
	return err == nil && a.Is6() && !a.Is4In6()
}

// familyOf is the IP family of an address written as text.
func familyOf(ip string) corev1.IPFamily {
	if isV6(ip) {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// addressTypeOf is the EndpointSlice address type of family f.
func addressTypeOf(f corev1.IPFamily) discoveryv1.AddressType {
	if f == corev1.IPv6Protocol {
		return discoveryv1.AddressTypeIPv6
	}
	return discoveryv1.AddressTypeIPv4
}

// familySliceName is the name of a slice of family f: the IPv4 one keeps the name the
// hub has always given it, the IPv6 one adds ".ipv6" (a dot no cluster or service name
// has, so no other slice can be called so; an EndpointSlice's address type cannot
// change, so the two never share a name).
func familySliceName(name string, f corev1.IPFamily) string {
	if f == corev1.IPv6Protocol {
		return name + ".ipv6"
	}
	return name
}

// importFamilies are the import's IP families that a member of view v takes, in the
// import's order: for a ClusterSetIP import those of its service ranges (its API server
// allocates the clusterset IP), for a headless one those of its pod ranges (its pods
// connect to the endpoints). None: the import is not for this member
// (IPFamilyNotSupported). The result may be the import's own slice: not to be changed.
func (e *exportPlan) importFamilies(v view) []corev1.IPFamily {
	has := v.pods
	if e.typ == mcsv1.ClusterSetIP {
		has = v.services
	}
	all := true
	for _, f := range e.props.ipFamilies {
		all = all && has.Has(f == corev1.IPv6Protocol)
	}
	if all {
		return e.props.ipFamilies // the common case, without an allocation per member
	}
	var out []corev1.IPFamily
	for _, f := range e.props.ipFamilies {
		if has.Has(f == corev1.IPv6Protocol) {
			out = append(out, f)
		}
	}
	return out
}

// reaches says whether a member of view v reaches source cluster's addresses of family
// f: both clusters' pods are of that family, so the family is routed between them.
func (p *Plan) reaches(v view, source string, f corev1.IPFamily) bool {
	v6 := f == corev1.IPv6Protocol
	return v.pods.Has(v6) && p.views[source].pods.Has(v6)
}

// clusterIPOf is s's cluster IP of family f, "" for none.
func (s *exportSource) clusterIPOf(f corev1.IPFamily) string {
	if len(s.clusterIPs) == 0 && s.clusterIP != "" && s.clusterIP != corev1.ClusterIPNone && familyOf(s.clusterIP) == f {
		return s.clusterIP
	}
	for _, ip := range s.clusterIPs {
		if ip != "" && ip != corev1.ClusterIPNone && familyOf(ip) == f {
			return ip
		}
	}
	return ""
}

// Summarise is the smallest prefix per family holding every CIDR given of that family,
// IPv4 first: what a member's nodes' pod CIDRs say its pod ranges are at least.
// Unparsable entries are left out.
func Summarise(cidrs []string) []string {
	var sum [2]netip.Prefix // IPv4, IPv6
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			continue
		}
		p = p.Masked()
		i := 0
		if p.Addr().Is6() {
			i = 1
		}
		s := sum[i]
		if !s.IsValid() {
			sum[i] = p
			continue
		}
		for bits := min(s.Bits(), p.Bits()); bits >= 0; bits-- {
			if a, _ := s.Addr().Prefix(bits); a.Contains(p.Addr()) {
				sum[i] = a
				break
			}
		}
	}
	var out []string
	for _, s := range sum {
		if s.IsValid() {
			out = append(out, s.String())
		}
	}
	return out
}
