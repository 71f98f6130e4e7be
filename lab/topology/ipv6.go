package topology

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// The IP families a lab's member clusters run (Spec.IPFamilies), as Kubernetes names them.
const (
	IPv4 = "IPv4"
	IPv6 = "IPv6"
)

// DualStack says whether the lab's member clusters are dual-stack: IPv4 first (their
// primary family), then IPv6 from the ClusterSet's IPv6 CIDRs or the lab's own IPv6
// range (Networks.IPv6).
func (s Spec) DualStack() bool { return len(s.IPFamilies) == 2 }

// checkFamilies refuses every family list the lab cannot build: IPv4 alone (the default,
// also when empty), IPv4 then IPv6 (dual-stack) and IPv6 alone (ipv6only.go) are built.
func checkFamilies(s Spec, fp *field.Path) field.ErrorList {
	switch {
	case len(s.IPFamilies) == 0, len(s.IPFamilies) == 1 && s.IPFamilies[0] == IPv4,
		s.DualStack() && s.IPFamilies[0] == IPv4 && s.IPFamilies[1] == IPv6, s.IPv6Only():
	default:
		return field.ErrorList{field.NotSupported(fp.Child("ipFamilies"), s.IPFamilies,
			[]string{"[IPv4]", "[IPv4, IPv6]", "[IPv6]"})}
	}
	if !s.HasIPv6() {
		return nil
	}
	// What a lab with IPv6 builds today: the bridge CNI (its host-local IPAM takes a
	// range per family) with host-gw routes in both families, gateways on the WAN.
	kind := s.familiesName()
	var errs field.ErrorList
	names := make([]string, 0, len(s.Clusters))
	for name := range s.Clusters {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		shape := s.Clusters[name]
		sp := fp.Child("clusters").Key(name)
		if shape.CNI != "" && shape.CNI != CNIBridge {
			errs = append(errs, field.Invalid(sp.Child("cni"), shape.CNI, kind+"'s clusters run the bridge CNI"))
		}
		if shape.GatewayNAT != "" {
			errs = append(errs, field.Invalid(sp.Child("gatewayNAT"), shape.GatewayNAT, kind+" puts no gateways behind NAT"))
		}
		// kube-proxy's iptables mode would need ip6tables, which the lab does not install.
		if s.IPv6Only() && shape.KubeProxyMode != "" && shape.KubeProxyMode != KubeProxyNFTables {
			errs = append(errs, field.Invalid(sp.Child("kubeProxyMode"), shape.KubeProxyMode, kind+"'s kube-proxy runs nftables"))
		}
	}
	if len(s.Unjoined) > 0 {
		errs = append(errs, field.Invalid(fp.Child("unjoined"), s.Unjoined, kind+" joins every cluster"))
	}
	// The members' Prometheus scrapes and the hub's federation are IPv4 in the lab.
	if s.IPv6Only() && s.Monitoring {
		errs = append(errs, field.Invalid(fp.Child("monitoring"), true, kind+" runs no Prometheus"))
	}
	return errs
}

// The lab's IPv6 range is a /48 of unique local addresses (fc00::/7, RFC 4193) chosen
// clear of the host's IPv6 routes and addresses (this project's machines hold fd00::2/64
// on eth0). Its 16 subnet bits are laid out so that every address reads back to what it
// is:
//
//	<range>:0:<i+1>::/64         member i's LAN (its IPv4 LAN is the LAN range's .<i+1>.0/24),
//	                             hosts at the same offsets as in IPv4 (router ::1, control plane ::2, nodes ::b…)
//	<range>:0:<0x100+i>::/112    member i's service CIDR
//	<range>:0:200::/64           the WAN (routers and gateways at their IPv4 offsets)
//	<range>:0:201::/64           the internet range (the internet ::1, the host's link ::fd/126)
//	<range>:0:<0x80+i>00::/56    member i's pod CIDR; node n's pods <range>:0:<0x80+i><n+1>::/64
//
// The host routes the whole /48 into the lab.
var ipv6Candidates = []string{"fd10:1ab::/48", "fd11:1ab::/48", "fd12:1ab::/48", "fd13:1ab::/48"}

// maxDualStackClusters is how many members the IPv6 layout numbers (pod CIDRs 0x80..0xff).
const maxDualStackClusters = 128

// subnet6 is the /bits network of the lab's IPv6 range with the 16-bit subnet id.
func subnet6(r netip.Prefix, id uint16, bits int) netip.Prefix {
	a := r.Addr().As16()
	a[6], a[7] = byte(id>>8), byte(id)
	return netip.PrefixFrom(netip.AddrFrom16(a), bits)
}

// nthAddr6 adds n to base's last 32 bits.
func nthAddr6(base netip.Addr, n int) netip.Addr {
	a := base.As16()
	v := uint32(a[12])<<24 | uint32(a[13])<<16 | uint32(a[14])<<8 | uint32(a[15])
	v += uint32(n)
	a[12], a[13], a[14], a[15] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	return netip.AddrFrom16(a)
}

// The IPv6 networks of member index i and the lab's shared ones.
func lan6(r netip.Prefix, i int) netip.Prefix     { return subnet6(r, uint16(i+1), 64) }
func service6(r netip.Prefix, i int) netip.Prefix { return subnet6(r, uint16(0x100+i), 112) }
func pods6(r netip.Prefix, i int) netip.Prefix    { return subnet6(r, uint16(0x80+i)<<8, 56) }
func wan6(r netip.Prefix) netip.Prefix            { return subnet6(r, 0x200, 64) }
func internet6(r netip.Prefix) netip.Prefix       { return subnet6(r, 0x201, 64) }

// with6 is the IPv6 counterpart of a host address of a network the lab numbers in both
// families: the address at the same offset from the network's start, with the IPv6
// network's prefix length.
func with6(v4 netip.Prefix, net4, net6 netip.Prefix) netip.Prefix {
	off := int(u32(v4.Addr()) - u32(net4.Masked().Addr()))
	return netip.PrefixFrom(nthAddr6(net6.Addr(), off), net6.Bits())
}

func u32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// checkIPv6Pin refuses a pinned IPv6 range that is not a /48 or larger of unique local
// addresses, or overlaps the host's or a range of the ClusterSet.
func checkIPv6Pin(fp *field.Path, s string, host []HostRange, taken []pinnedRange) (netip.Prefix, *field.Error) {
	p, err := netip.ParsePrefix(s)
	ula := netip.MustParsePrefix("fc00::/7")
	switch {
	case err != nil:
		return p, field.Invalid(fp, s, err.Error())
	case !p.Addr().Is6() || p.Addr().Is4In6():
		return p, field.Invalid(fp, s, "must be IPv6")
	case p.Masked() != p:
		return p, field.Invalid(fp, s, "has host bits set (want "+p.Masked().String()+")")
	case p.Bits() > 48:
		return p, field.Invalid(fp, s, fmt.Sprintf("too small: the lab needs a /48 or larger, got /%d", p.Bits()))
	case !ula.Contains(p.Addr()):
		return p, field.Invalid(fp, s, "outside the unique local addresses (fc00::/7) a lab may use")
	}
	return p, clearOf(fp, s, p, host, taken)
}

// chooseIPv6 is the pinned IPv6 range, checked, or the first candidate clear of the host
// and of the ClusterSet's ranges.
func chooseIPv6(pin string, host []HostRange, taken []pinnedRange) (string, *field.Error) {
	fp := field.NewPath("lab", "networks", "ipv6")
	if pin != "" {
		p, err := checkIPv6Pin(fp, pin, host, taken)
		if err != nil {
			return "", err
		}
		return p.String(), nil
	}
	var tried []string
	for _, c := range ipv6Candidates {
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
			return c, nil
		}
		tried = append(tried, c+" overlaps "+strings.Join(why, ", "))
	}
	return "", field.Required(fp, "no default is clear ("+strings.Join(tried, "; ")+"): pin a free fc00::/7 range in the lab file")
}

// lanTwin is the IPv6 twin of an address on the cluster's LAN.
func (l *Lab) lanTwin(c *Cluster, v4 netip.Prefix) netip.Prefix {
	return with6(v4, c.LANSubnet, c.LANSubnet6)
}

// wanTwin is the IPv6 twin of an address on the WAN; invalid in an IPv4 lab.
func (l *Lab) wanTwin(v4 netip.Prefix) netip.Prefix {
	if !l.IPv6Range.IsValid() {
		return netip.Prefix{}
	}
	return with6(v4, l.WANSubnet, l.WANSubnet6)
}

// appendRoute appends the route to dst via via unless dst is invalid (an IPv4 range of
// an IPv6-only cluster).
func appendRoute(routes []Route, dst, via netip.Prefix) []Route {
	if !dst.IsValid() {
		return routes
	}
	return append(routes, Route{Dst: dst, Via: via.Addr()})
}

// appendRoute6 appends the route to dst via via when the lab is dual-stack (both valid).
func appendRoute6(routes []Route, dst, via netip.Prefix) []Route {
	if !dst.IsValid() || !via.IsValid() {
		return routes
	}
	return append(routes, Route{Dst: dst, Via: via.Addr()})
}

// PodCIDRs are the cluster's pod CIDRs, IPv4 first, then IPv6 in a dual-stack lab (IPv6
// alone in an IPv6-only lab): what
// its Nodes' spec.podCIDRs are carved from, and what the ClusterSet will list for it once
// the API takes IPv6.
func (c *Cluster) PodCIDRs() []netip.Prefix { return twoFamilies(c.PodCIDR, c.PodCIDR6) }

// ServiceCIDRs are the cluster's service CIDRs (the API server's
// --service-cluster-ip-range), IPv4 first, then IPv6 in a dual-stack lab (IPv6 alone in
// an IPv6-only lab).
func (c *Cluster) ServiceCIDRs() []netip.Prefix { return twoFamilies(c.ServiceCIDR, c.ServiceCIDR6) }

func twoFamilies(v4, v6 netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []netip.Prefix{v4, v6} {
		if p.IsValid() {
			out = append(out, p)
		}
	}
	return out
}

// nthSubnet64 is the n-th /64 of p (a /64 or larger): node i of a cluster takes the
// (i+1)-th of its IPv6 pod CIDR, as it takes the (i+1)-th /24 of the IPv4 one.
func nthSubnet64(p netip.Prefix, n int) netip.Prefix {
	a := p.Masked().Addr().As16()
	var hi uint64
	for _, b := range a[:8] {
		hi = hi<<8 | uint64(b)
	}
	hi += uint64(n)
	for i := 7; i >= 0; i-- {
		a[i], hi = byte(hi), hi>>8
	}
	return netip.PrefixFrom(netip.AddrFrom16(a), 64)
}

// ipv6CIDRs are a dual-stack cluster's IPv6 pod and service CIDRs: the first IPv6 CIDR
// the ClusterSet lists for it of each kind (once the API takes them), else the lab's
// own. A pod CIDR must leave a /64 for every node, a service CIDR be a /108 to /120 (the
// API server's bounds for an IPv6 service range, with room for kube-dns's .10).
func (l *Lab) ipv6CIDRs(c straitv1.ClusterSpec, index, nodes int, fp *field.Path) (pods, svcs netip.Prefix, errs field.ErrorList) {
	pods, svcs = pods6(l.IPv6Range, index), service6(l.IPv6Range, index)
	if p, j, ok := firstIPv6(c.PodCIDRs); ok {
		if p.Bits() > 64-bitsFor(nodes) {
			errs = append(errs, field.Invalid(fp.Child("podCIDRs").Index(j), p.String(),
				fmt.Sprintf("too small for %d nodes with a /64 each", nodes)))
		}
		pods = p
	}
	if p, j, ok := firstIPv6(c.ServiceCIDRs); ok {
		if p.Bits() < 108 || p.Bits() > 120 {
			errs = append(errs, field.Invalid(fp.Child("serviceCIDRs").Index(j), p.String(), "the lab takes an IPv6 service CIDR of /108 to /120"))
		}
		svcs = p
	}
	return pods, svcs, errs
}

// firstIPv6 is the first IPv6 CIDR of cidrs, masked, and its index.
func firstIPv6(cidrs []string) (netip.Prefix, int, bool) {
	for j, s := range cidrs {
		if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is6() && !p.Addr().Is4In6() {
			return p.Masked(), j, true
		}
	}
	return netip.Prefix{}, 0, false
}

// refuseIPv6CIDRs refuses the ClusterSet's IPv6 pod and service CIDRs in an IPv4 lab:
// its clusters would have no IPv6 to give them.
func refuseIPv6CIDRs(cs *straitv1.ClusterSet) field.ErrorList {
	var errs field.ErrorList
	cidrLists(cs, func(at *field.Path, _ string, cidrs []string) {
		// The first CIDR is refused as the lab's first, which must be IPv4.
		if p, j, ok := firstIPv6(cidrs); ok && j > 0 {
			errs = append(errs, field.Invalid(at.Index(j), p.String(), "an IPv6 CIDR needs a lab with IPv6 (ipFamilies: [IPv4, IPv6] or [IPv6])"))
		}
	})
	return errs
}

// cidrLists calls visit with each cluster's podCIDRs and serviceCIDRs, their path and
// their field's name.
func cidrLists(cs *straitv1.ClusterSet, visit func(at *field.Path, kind string, cidrs []string)) {
	for i, c := range cs.Spec.Clusters {
		cp := field.NewPath("spec", "clusters").Index(i)
		visit(cp.Child("podCIDRs"), "podCIDRs", c.PodCIDRs)
		visit(cp.Child("serviceCIDRs"), "serviceCIDRs", c.ServiceCIDRs)
	}
}
