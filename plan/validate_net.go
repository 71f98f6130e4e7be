package plan

import (
	"fmt"
	"math/bits"
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// unroutable are ranges no host forwards between machines: a pod, service or global
// range inside one of them cannot be reached through a gateway.
func unroutable() []struct {
	prefix netip.Prefix
	what   string
} {
	return []struct {
		prefix netip.Prefix
		what   string
	}{
		{netip.MustParsePrefix("0.0.0.0/8"), "\"this network\", never a destination"},
		{netip.MustParsePrefix("127.0.0.0/8"), "loopback, which never leaves a host"},
		{netip.MustParsePrefix("169.254.0.0/16"), "link-local, which never crosses a router"},
		{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
		{netip.MustParsePrefix("255.255.255.255/32"), "the limited broadcast address"},
		{netip.MustParsePrefix("::/128"), "the unspecified address, never a destination"},
		{netip.MustParsePrefix("::1/128"), "loopback, which never leaves a host"},
		{netip.MustParsePrefix("fe80::/10"), "link-local, which never crosses a router"},
		{netip.MustParsePrefix("ff00::/8"), "multicast"},
	}
}

// routableCIDR parses a CIDR of either family the data plane can route and says plainly
// what is wrong with any other. Parsing is exactly the API server's isCIDR: no
// surrounding spaces, no IPv4-mapped IPv6.
func routableCIDR(path *field.Path, s, example string) (netip.Prefix, *field.Error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || p.Addr().Is4In6() || p.Addr().Zone() != "" {
		return p, field.Invalid(path, s, "not a CIDR: want a network address and a prefix length, such as "+example)
	}
	if p.Masked() != p {
		return p, field.Invalid(path, s, fmt.Sprintf("host bits are set: the network of this prefix is %s; write that", p.Masked()))
	}
	for _, u := range unroutable() {
		if u.prefix.Overlaps(p) {
			return p, field.Invalid(path, s, fmt.Sprintf("overlaps %s, %s: traffic to it cannot be routed through a gateway", u.prefix, u.what))
		}
	}
	return p, nil
}

// globalCIDR parses a global range or a cluster's pinned global CIDR: routable and IPv4,
// the one family globalnet translates.
func globalCIDR(path *field.Path, s, example string) (netip.Prefix, *field.Error) {
	p, err := routableCIDR(path, s, example)
	if err == nil && !p.Addr().Is4() {
		return p, field.Invalid(path, s, "must be IPv4: globalnet translates IPv4 only (a dual-stack cluster's IPv6 ranges are routed as they are)")
	}
	return p, err
}

// validateGlobalnet checks spec.globalnet whenever it is present, as the schema does,
// and the global CIDRs against each other and the clusters' own CIDRs when it is on.
func validateGlobalnet(spec *straitv1.ClusterSetSpec, specPath *field.Path) field.ErrorList {
	g := spec.Globalnet
	if g == nil {
		return nil
	}
	path := specPath.Child("globalnet")
	var errs field.ErrorList
	rng, rerr := globalCIDR(path.Child("cidrRange"), g.CIDRRange, straitv1.DefaultGlobalCIDRRange)
	if rerr != nil {
		errs = append(errs, rerr)
	}
	size := uint64(g.ClusterSize)
	if size < minGlobalClusterSz || size > maxGlobalClusterSz || size&(size-1) != 0 {
		errs = append(errs, field.Invalid(path.Child("clusterSize"), g.ClusterSize, "must be a power of two from 4 to 16777216"))
	}
	if g.ClusterEgressIPs < 1 || g.ClusterEgressIPs > maxEgressIPs {
		errs = append(errs, field.Invalid(path.Child("clusterEgressIPs"), g.ClusterEgressIPs, "must be between 1 and 256"))
	}
	if !g.Enabled || len(errs) > 0 {
		return errs
	}
	if uint64(g.ClusterEgressIPs)+reservedGlobalIPs >= size {
		errs = append(errs, field.Invalid(path.Child("clusterEgressIPs"), g.ClusterEgressIPs, fmt.Sprintf(
			"%d egress IPs do not fit a cluster's global CIDR of %d addresses (%d is reserved, and services need some); raise spec.globalnet.clusterSize or lower this",
			g.ClusterEgressIPs, size, reservedGlobalIPs)))
	}
	errs = append(errs, rangeOverClusters(spec, rng, path.Child("cidrRange"))...)
	errs = append(errs, validatePins(spec, rng, specPath.Child("clusters"))...)
	rangeSize := uint64(1) << (32 - rng.Bits())
	needed := uint64(len(spec.Clusters)) * size
	if needed > rangeSize {
		fix := "use a shorter prefix"
		// The largest clusterSize that fits: a power of two, rangeSize/clusters or less.
		if fits := uint64(1) << (bits.Len64(rangeSize/uint64(len(spec.Clusters))) - 1); fits >= minGlobalClusterSz {
			fix = fmt.Sprintf("set spec.globalnet.clusterSize to %d (or less), or use a shorter prefix", fits)
		}
		errs = append(errs, field.Invalid(path.Child("cidrRange"), g.CIDRRange, fmt.Sprintf(
			"too small: %d clusters need %d global addresses (clusterSize %d each) but the range has %d; %s",
			len(spec.Clusters), needed, size, rangeSize, fix)))
	}
	return errs
}

// rangeOverClusters refuses a global range that overlaps a cluster's pod or service
// CIDR: a global address there would be routed as that cluster's own address.
func rangeOverClusters(spec *straitv1.ClusterSetSpec, rng netip.Prefix, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, c := range spec.Clusters {
		for _, kc := range []struct {
			kind  string
			cidrs []string
		}{{"podCIDRs", c.PodCIDRs}, {"serviceCIDRs", c.ServiceCIDRs}} {
			for _, s := range kc.cidrs {
				p, err := netip.ParsePrefix(s)
				if err != nil || !p.Addr().Is4() || !p.Overlaps(rng) {
					continue
				}
				errs = append(errs, field.Invalid(path, rng.String(), fmt.Sprintf(
					"overlaps cluster %s's %s %s: global addresses must be distinct from every cluster's own; choose a range no cluster uses, such as %s",
					c.Name, kc.kind, p.Masked(), straitv1.DefaultGlobalCIDRRange)))
			}
		}
	}
	return errs
}

// validatePins checks the clusters' pinned global CIDRs: inside the range, exactly
// clusterSize addresses (every cluster gets the same block, and the allocator keeps only
// blocks of that size), not overlapping each other.
func validatePins(spec *straitv1.ClusterSetSpec, rng netip.Prefix, path *field.Path) field.ErrorList {
	g := spec.Globalnet
	wantBits := 32 - bits.Len64(uint64(g.ClusterSize)) + 1
	var errs field.ErrorList
	var pins []namedPrefix
	for i := range spec.Clusters {
		c := &spec.Clusters[i]
		if c.GlobalCIDR == "" {
			continue
		}
		p := path.Index(i).Child("globalCIDR")
		pin, err := globalCIDR(p, c.GlobalCIDR, "242.1.0.0/16")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !rng.Contains(pin.Addr()) || pin.Bits() < rng.Bits() {
			errs = append(errs, field.Invalid(p, c.GlobalCIDR, fmt.Sprintf("cluster %s's pinned global CIDR is outside spec.globalnet.cidrRange %s", c.Name, rng)))
			continue
		}
		if pin.Bits() != wantBits {
			errs = append(errs, field.Invalid(p, c.GlobalCIDR, fmt.Sprintf(
				"cluster %s's pinned global CIDR has %d addresses but spec.globalnet.clusterSize is %d: pin a /%d or set clusterSize to %d",
				c.Name, uint64(1)<<(32-pin.Bits()), g.ClusterSize, wantBits, uint64(1)<<(32-pin.Bits()))))
			continue
		}
		for _, other := range pins {
			if other.prefix.Overlaps(pin) {
				errs = append(errs, field.Invalid(p, c.GlobalCIDR, fmt.Sprintf(
					"pinned global CIDRs of clusters %s and %s overlap: %s and %s", other.cluster, c.Name, other.prefix, pin)))
			}
		}
		pins = append(pins, namedPrefix{cluster: c.Name, prefix: pin, path: p})
	}
	return errs
}
