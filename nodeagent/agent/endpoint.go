package agent

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/kernel"
)

// AnnotationGatewayIP on a Node overrides, for that node alone, the address other
// gateways send tunnel traffic to (what the ClusterSet's spec.clusters[].gateway.endpoint
// would give it). Kept for a node the file cannot describe; the ClusterSet is the place.
const AnnotationGatewayIP = "strait.io/gateway-ip"

// GatewayAddrs are a gateway node's two addresses for the cable.
type GatewayAddrs struct {
	// Local is the node's own address: the cable binds and sends from it.
	Local netip.Addr
	// Advertised is where other gateways send to; invalid when the node cannot know it
	// (the hub gives the Peers a LoadBalancer's or a DNS name's address) or when nothing
	// can dial it (behind masquerade only).
	Advertised netip.Addr
}

// InternalIP is the node's IPv4 InternalIP, else its IPv6 one (a node of an IPv6-only
// cluster): the underlay vx-strait runs over. A dual-stack node's is IPv4, so that every
// node of a dual-stack cluster picks the same family.
func InternalIP(node *corev1.Node) netip.Addr { return nodeAddress(node, corev1.NodeInternalIP) }

// nodeAddress is the node's first address of the type that is IPv4, else its first
// IPv6 one.
func nodeAddress(node *corev1.Node, typ corev1.NodeAddressType) netip.Addr {
	var v6 netip.Addr
	for _, a := range node.Status.Addresses {
		if a.Type != typ {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		switch {
		case err != nil:
		case ip.Unmap().Is4():
			return ip.Unmap()
		case !v6.IsValid() && ip.Zone() == "":
			v6 = ip
		}
	}
	return v6
}

// GatewayAddresses are node's addresses for the cable under m. The advertised one is the
// node's annotation when set, else what the Membership's gateway endpoint says for this
// node, else its InternalIP. The local one is the advertised one when a device of the
// node holds it (a node on the WAN itself), else the InternalIP: behind a NAT the node
// owns only its private address, and binding to the public one fails in every driver.
func GatewayAddresses(m *straitv1.Membership, node *corev1.Node, links []kernel.Link) (GatewayAddrs, error) {
	internal := InternalIP(node)
	adv, err := advertised(m, node)
	local := internal
	if _, ok := linkWithAddr(links, adv); ok && adv.IsValid() {
		local = adv
	}
	return GatewayAddrs{Local: local, Advertised: adv}, err
}

// advertised is where other gateways reach node: invalid for the endpoint types only
// the hub or the dialing side can resolve (LoadBalancer, DNSName) and behind masquerade.
func advertised(m *straitv1.Membership, node *corev1.Node) (netip.Addr, error) {
	if s := node.Annotations[AnnotationGatewayIP]; s != "" {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("node %s: annotation %s=%q: not an IP address", node.Name, AnnotationGatewayIP, s)
		}
		return ip, nil
	}
	var ep *straitv1.GatewayEndpoint
	if m != nil {
		ep = m.Spec.GatewayEndpoint
	}
	if ep == nil {
		return InternalIP(node), nil
	}
	switch ep.Type {
	case straitv1.EndpointAddress:
		s := ep.Address
		for _, na := range ep.NodeAddresses {
			if na.Node == node.Name {
				s = na.Address
			}
		}
		if s == "" {
			return netip.Addr{}, fmt.Errorf("node %s has no public address in the ClusterSet's spec.gateway.endpoint.nodeAddresses", node.Name)
		}
		return netip.ParseAddr(s)
	case straitv1.EndpointExternalIP:
		if ip := nodeAddress(node, corev1.NodeExternalIP); ip.IsValid() {
			return ip, nil
		}
		return netip.Addr{}, fmt.Errorf("node %s has no ExternalIP, which spec.gateway.endpoint type ExternalIP needs", node.Name)
	case straitv1.EndpointLoadBalancer, straitv1.EndpointDNSName, straitv1.EndpointMasquerade:
		return netip.Addr{}, nil
	}
	return InternalIP(node), nil
}

// behindMasquerade says whether m's gateways cannot be dialed.
func behindMasquerade(m *straitv1.Membership) bool {
	return m != nil && m.Spec.GatewayEndpoint != nil && m.Spec.GatewayEndpoint.Type == straitv1.EndpointMasquerade
}
