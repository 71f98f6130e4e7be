package plan

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

func TestPeerEndpointFollowsTheClusterSet(t *testing.T) {
	active := func(ip string) *MemberFacts {
		return &MemberFacts{Gateways: []straitv1.Gateway{{Spec: straitv1.GatewaySpec{NodeName: "c2-gw1", HAState: straitv1.HAActive,
			IP: ip, LocalIP: "10.2.255.11", Port: 51871, Driver: straitv1.CableWireGuard}}}}
	}
	lb := func(ingress ...corev1.LoadBalancerIngress) *MemberFacts {
		f := active("")
		f.GatewayService = &corev1.Service{Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: ingress}}}
		return f
	}
	lbType := &straitv1.GatewayEndpoint{Type: straitv1.EndpointLoadBalancer, Service: &straitv1.ServiceReference{Namespace: "strait-system", Name: "gw"}}
	for _, tc := range []struct {
		name  string
		ep    *straitv1.GatewayEndpoint
		facts *MemberFacts
		want  string // ip|hostname|refresh|masquerade, or "none"
	}{
		{name: "default: the address the active gateway publishes", facts: active("10.2.255.11"), want: "10.2.255.11|||false"},
		{name: "fixed or ExternalIP: the gateway publishes its public address", ep: &straitv1.GatewayEndpoint{Type: straitv1.EndpointExternalIP},
			facts: active("203.0.113.5"), want: "203.0.113.5|||false"},
		{name: "no active gateway: no endpoint", facts: &MemberFacts{}, want: "none"},
		{name: "an active gateway that publishes no address yet: no endpoint", facts: active(""), want: "none"},
		{name: "LoadBalancer: the Service's address, not the node's", ep: lbType,
			facts: lb(corev1.LoadBalancerIngress{IP: "198.51.100.7"}), want: "198.51.100.7|||false"},
		{name: "LoadBalancer with a hostname: resolved by the dialing side", ep: lbType,
			facts: lb(corev1.LoadBalancerIngress{Hostname: "lb.example.org"}), want: "|lb.example.org|1m0s|false"},
		{name: "LoadBalancer without an address yet: no endpoint", ep: lbType, facts: lb(), want: "none"},
		{name: "DNSName with its interval", ep: &straitv1.GatewayEndpoint{Type: straitv1.EndpointDNSName, DNSName: "gw.c2.example.org",
			RefreshInterval: &metav1.Duration{Duration: 15 * time.Second}}, facts: active(""), want: "|gw.c2.example.org|15s|false"},
		{name: "Masquerade: nothing to dial, even when the node publishes its own address",
			ep: &straitv1.GatewayEndpoint{Type: straitv1.EndpointMasquerade}, facts: active("10.2.255.11"), want: "|||true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := "none"
			if ep := peerEndpoint(tc.ep, tc.facts); ep != nil {
				refresh := ""
				if ep.RefreshInterval != nil {
					refresh = ep.RefreshInterval.Duration.String()
				}
				got = ep.IP + "|" + ep.Hostname + "|" + refresh + "|" + map[bool]string{true: "true", false: "false"}[ep.BehindMasquerade]
				if ep.Gateway != "c2-gw1" || ep.Port != 51871 {
					t.Errorf("gateway %q port %d, want the active gateway's", ep.Gateway, ep.Port)
				}
			}
			if got != tc.want {
				t.Errorf("endpoint %s, want %s", got, tc.want)
			}
		})
	}
}

func TestValidateAcceptsEveryEndpointType(t *testing.T) {
	for _, ep := range []straitv1.GatewayEndpoint{
		{Type: straitv1.EndpointInternalIP},
		{Type: straitv1.EndpointAddress, Address: "203.0.113.7"},
		{Type: straitv1.EndpointAddress, NodeAddresses: []straitv1.NodeAddress{{Node: "c2-gw1", Address: "203.0.113.7"}, {Node: "c2-gw2", Address: "203.0.113.8"}}},
		{Type: straitv1.EndpointExternalIP},
		{Type: straitv1.EndpointLoadBalancer, Service: &straitv1.ServiceReference{Namespace: "strait-system", Name: "gateways"}},
		{Type: straitv1.EndpointDNSName, DNSName: "gw.c2.example.org", RefreshInterval: &metav1.Duration{Duration: 30 * time.Second}},
		{Type: straitv1.EndpointMasquerade},
	} {
		cs := twoClusters()
		cs.Spec.Clusters[1].Gateway.Endpoint = &ep
		if errs := Validate(cs); len(errs) > 0 {
			t.Errorf("%s: %v", ep.Type, errs.ToAggregate())
		}
	}
}

func TestValidateRefusesWhatVXLANCannotReach(t *testing.T) {
	for _, typ := range []straitv1.GatewayEndpointType{straitv1.EndpointMasquerade, straitv1.EndpointDNSName} {
		cs := twoClusters()
		cs.Spec.Cable.Driver = straitv1.CableVXLAN
		cs.Spec.Clusters[1].Gateway.Endpoint = &straitv1.GatewayEndpoint{Type: typ, DNSName: map[bool]string{true: "gw.example.org"}[typ == straitv1.EndpointDNSName]}
		errs := Validate(cs)
		if len(errs) != 1 || errs[0].Field != "spec.clusters[1].gateway.endpoint.type" || errs[0].BadValue != typ {
			t.Errorf("%s with vxlan: %v, want one refusal of spec.clusters[1].gateway.endpoint.type", typ, errs.ToAggregate())
		}
	}
}
