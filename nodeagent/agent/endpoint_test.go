package agent

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/kernel"
)

func TestGatewayAddresses(t *testing.T) {
	onLAN := []kernel.Link{{Name: "eth0", Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/24")}}}
	onWAN := append([]kernel.Link{{Name: "wan", Addrs: []netip.Prefix{netip.MustParsePrefix("198.18.0.11/24")}}}, onLAN...)
	annotated := func(ip string) corev1.Node {
		n := node("gw1", "10.0.0.1", true)
		n.Annotations = map[string]string{AnnotationGatewayIP: ip}
		return n
	}
	withExternal := func(ip string) corev1.Node {
		n := node("gw1", "10.0.0.1", true)
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: ip})
		return n
	}
	membership := func(ep *straitv1.GatewayEndpoint) *straitv1.Membership {
		return &straitv1.Membership{Spec: straitv1.MembershipSpec{ClusterID: "c2", GatewayEndpoint: ep}}
	}
	for _, tc := range []struct {
		name              string
		m                 *straitv1.Membership
		node              corev1.Node
		links             []kernel.Link
		local, advertised string
		err               string
	}{
		{name: "no NAT: the InternalIP both ways", m: membership(nil), node: node("gw1", "10.0.0.1", true), links: onLAN,
			local: "10.0.0.1", advertised: "10.0.0.1"},
		{name: "the annotation names an address the node holds (on the WAN itself): bound there too",
			m: membership(nil), node: annotated("198.18.0.11"), links: onWAN, local: "198.18.0.11", advertised: "198.18.0.11"},
		{name: "the annotation names a NAT's address: advertised only, bound to the InternalIP",
			m: membership(nil), node: annotated("203.0.113.7"), links: onLAN, local: "10.0.0.1", advertised: "203.0.113.7"},
		{name: "a public address per node from the ClusterSet",
			m: membership(&straitv1.GatewayEndpoint{Type: straitv1.EndpointAddress, NodeAddresses: []straitv1.NodeAddress{
				{Node: "gw2", Address: "203.0.113.8"}, {Node: "gw1", Address: "203.0.113.7"}}}),
			node: node("gw1", "10.0.0.1", true), links: onLAN, local: "10.0.0.1", advertised: "203.0.113.7"},
		{name: "one public address for the whole cluster",
			m:    membership(&straitv1.GatewayEndpoint{Type: straitv1.EndpointAddress, Address: "203.0.113.9"}),
			node: node("gw1", "10.0.0.1", true), links: onLAN, local: "10.0.0.1", advertised: "203.0.113.9"},
		{name: "the annotation overrides the ClusterSet for its node",
			m:    membership(&straitv1.GatewayEndpoint{Type: straitv1.EndpointAddress, Address: "203.0.113.9"}),
			node: annotated("203.0.113.70"), links: onLAN, local: "10.0.0.1", advertised: "203.0.113.70"},
		{name: "the node's ExternalIP", m: membership(&straitv1.GatewayEndpoint{Type: straitv1.EndpointExternalIP}),
			node: withExternal("203.0.113.5"), links: onLAN, local: "10.0.0.1", advertised: "203.0.113.5"},
		{name: "ExternalIP asked for, none set: nothing advertised, and said why",
			m:    membership(&straitv1.GatewayEndpoint{Type: straitv1.EndpointExternalIP}),
			node: node("gw1", "10.0.0.1", true), links: onLAN, local: "10.0.0.1",
			err: "node gw1 has no ExternalIP, which spec.gateway.endpoint type ExternalIP needs"},
		{name: "behind masquerade: nothing to advertise", m: membership(&straitv1.GatewayEndpoint{Type: straitv1.EndpointMasquerade}),
			node: node("gw1", "10.0.0.1", true), links: onLAN, local: "10.0.0.1"},
		{name: "a LoadBalancer's address is the hub's to read", m: membership(&straitv1.GatewayEndpoint{Type: straitv1.EndpointLoadBalancer,
			Service: &straitv1.ServiceReference{Namespace: "strait-system", Name: "gw"}}),
			node: node("gw1", "10.0.0.1", true), links: onLAN, local: "10.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := GatewayAddresses(tc.m, &tc.node, tc.links)
			if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if addrString(got.Local) != tc.local || addrString(got.Advertised) != tc.advertised {
				t.Errorf("local %s advertised %s, want %s and %s", got.Local, got.Advertised, tc.local, tc.advertised)
			}
		})
	}
}

func TestInitiatorBehindMasquerade(t *testing.T) {
	open := &straitv1.PeerEndpoint{IP: "198.18.0.12"}
	masq := &straitv1.PeerEndpoint{BehindMasquerade: true}
	for _, tc := range []struct {
		driver    straitv1.CableDriver
		local     cable.Local
		remote    string
		ep        *straitv1.PeerEndpoint
		initiator string
	}{
		// The side behind masquerade dials, whatever the cluster IDs' order.
		{straitv1.CableIPsec, cable.Local{ClusterID: "c2", BehindMasquerade: true}, "c1", open, "Local"},
		{straitv1.CableIPsec, cable.Local{ClusterID: "c1"}, "c2", masq, "Remote"},
		{straitv1.CableWireGuard, cable.Local{ClusterID: "c1", BehindMasquerade: true}, "c2", masq, "None"},
		// Without masquerade: IPsec's lower cluster ID; WireGuard from both ends.
		{straitv1.CableIPsec, cable.Local{ClusterID: "c1"}, "c2", open, "Local"},
		{straitv1.CableIPsec, cable.Local{ClusterID: "c2"}, "c1", open, "Remote"},
		{straitv1.CableWireGuard, cable.Local{ClusterID: "c2"}, "c1", open, "Both"},
		{straitv1.CableWireGuard, cable.Local{ClusterID: "c2"}, "c1", nil, ""},
	} {
		if got := initiator(tc.driver, tc.local, tc.remote, tc.ep); got != tc.initiator {
			t.Errorf("%s, %s (masquerade %v) to %s %+v: initiator %q, want %q", tc.driver, tc.local.ClusterID,
				tc.local.BehindMasquerade, tc.remote, tc.ep, got, tc.initiator)
		}
	}
}

// TestInternalIPPrefersIPv4: every node of a dual-stack cluster runs vx-strait over
// IPv4, whatever order its addresses come in; a node of an IPv6-only cluster over IPv6.
func TestInternalIPPrefersIPv4(t *testing.T) {
	for _, tc := range []struct {
		addrs []string
		want  string
	}{
		{[]string{"10.0.0.1", "2001:db8::1"}, "10.0.0.1"},
		{[]string{"2001:db8::1", "10.0.0.1"}, "10.0.0.1"},
		{[]string{"2001:db8::1", "2001:db8::2"}, "2001:db8::1"},
		{nil, "invalid IP"},
	} {
		n := corev1.Node{}
		for _, a := range tc.addrs {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: a})
		}
		if got := InternalIP(&n).String(); got != tc.want {
			t.Errorf("InternalIP(%v) = %s, want %s", tc.addrs, got, tc.want)
		}
	}
}
