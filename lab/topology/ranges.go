package topology

import (
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// labRanges returns the address ranges a lab may route inside its namespaces: private
// (RFC 1918), shared (RFC 6598), benchmarking (RFC 2544), documentation (RFC 5737) and
// reserved (240.0.0.0/4, where globalnet's default 242.0.0.0/8 lies), and in IPv6 the
// unique local addresses (fc00::/7, a dual-stack lab's own range). A range outside
// them belongs to someone on the internet, and a lab route to it could send traffic
// there if a namespace were ever wired wrongly.
func labRanges() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("192.0.2.0/24"),
		netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"),
		netip.MustParsePrefix("240.0.0.0/4"),
		netip.MustParsePrefix("fc00::/7"),
	}
}

// inLabRanges says whether p lies wholly inside one of labRanges.
func inLabRanges(p netip.Prefix) bool {
	for _, r := range labRanges() {
		if r.Bits() <= p.Bits() && r.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// checkRanges refuses every CIDR of the ClusterSet the lab would route that is not
// inside labRanges; unparsable values are left to the other checks.
func checkRanges(cs *straitv1.ClusterSet) field.ErrorList {
	var errs field.ErrorList
	for _, r := range clusterSetRanges(cs) {
		if !inLabRanges(r.prefix) {
			errs = append(errs, field.Invalid(r.path, r.prefix.String(),
				"outside the ranges a lab may use (private, shared, documentation, benchmarking, 240.0.0.0/4 or fc00::/7)"))
		}
	}
	return errs
}
