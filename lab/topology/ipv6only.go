package topology

import (
	"net/netip"

	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// An IPv6-only lab (Spec.IPFamilies [IPv6]) runs member clusters that know IPv6 alone:
// the ClusterSet's IPv6 pod and service CIDRs are theirs, their API servers advertise an
// IPv6 address, their Nodes' InternalIPs and pods' and Services' addresses are IPv6, and
// their gateways reach each other at their IPv6 WAN addresses. Underneath, the lab's
// namespaces keep their IPv4 LAN and WAN addresses as the lab's own management network:
// the host's forwarders, the hub (which stays IPv4) and the kubelets reach the API
// servers there, as a real IPv6-only cluster's API server may be reached over a
// management network of either family. Kubernetes and Strait see none of them.

// IPv6Only says whether the lab's member clusters are IPv6-only.
func (s Spec) IPv6Only() bool { return len(s.IPFamilies) == 1 && s.IPFamilies[0] == IPv6 }

// HasIPv6 says whether the lab's member clusters have IPv6 (dual-stack or IPv6-only): the
// lab then has an IPv6 range and numbers every LAN and WAN address in both families.
func (s Spec) HasIPv6() bool { return s.DualStack() || s.IPv6Only() }

// familiesName names the lab's kind in refusals.
func (s Spec) familiesName() string {
	if s.IPv6Only() {
		return "an IPv6-only lab"
	}
	return "a dual-stack lab"
}

// IPv6Only says whether the cluster is IPv6-only: an IPv6 pod CIDR and no IPv4 one.
func (c *Cluster) IPv6Only() bool { return !c.PodCIDR.IsValid() && c.PodCIDR6.IsValid() }

// IPv6Only says whether the node belongs to an IPv6-only cluster.
func (n Node) IPv6Only() bool { return !n.PodCIDR.IsValid() && n.PodCIDR6.IsValid() }

// InternalIPs are the node's addresses as its Node reports them (the kubelet's
// --node-ip): its LAN address, then its IPv6 one in a dual-stack cluster; the IPv6 one
// alone in an IPv6-only cluster.
func (n Node) InternalIPs() []netip.Addr {
	if n.IPv6Only() {
		return []netip.Addr{n.LANAddr6.Addr()}
	}
	out := []netip.Addr{n.LANAddr.Addr()}
	if n.LANAddr6.IsValid() {
		out = append(out, n.LANAddr6.Addr())
	}
	return out
}

// GatewayIP is the address other gateways reach a gateway node at (the lab's
// strait.io/gateway-ip annotation): its WAN address, the IPv6 one in an IPv6-only
// cluster; invalid behind a NAT (no WAN address).
func (n Node) GatewayIP() netip.Addr {
	if n.IPv6Only() {
		return n.WANAddr6.Addr()
	}
	return n.WANAddr.Addr()
}

// checkIPv6Only refuses what an IPv6-only lab cannot build from the ClusterSet: an IPv4
// pod or service CIDR (its clusters have no IPv4), a cluster without an IPv6 pod or
// service CIDR (the ClusterSet must say its clusters' ranges: they are what Strait
// routes), and globalnet (it translates IPv4 only).
func checkIPv6Only(cs *straitv1.ClusterSet) field.ErrorList {
	var errs field.ErrorList
	cidrLists(cs, func(at *field.Path, kind string, cidrs []string) {
		for j, s := range cidrs {
			if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() {
				errs = append(errs, field.Invalid(at.Index(j), s, "an IPv6-only lab's clusters have no IPv4 (ipFamilies: [IPv6])"))
			}
		}
		if _, _, ok := firstIPv6(cidrs); !ok {
			errs = append(errs, field.Required(at, "an IPv6-only lab needs the cluster's IPv6 "+kind))
		}
	})
	if g := cs.Spec.Globalnet; g != nil && g.Enabled {
		errs = append(errs, field.Invalid(field.NewPath("spec", "globalnet", "enabled"), true,
			"an IPv6-only lab's clusters have no IPv4 for globalnet to translate (ipFamilies: [IPv6])"))
	}
	return errs
}
