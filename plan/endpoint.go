package plan

import (
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// peerEndpoint is where the other clusters reach a cluster whose gateways ep describes
// and whose facts are f: its active gateway's published address (the node's own, its
// ExternalIP, its public address from the file or its annotation: the agent knows
// which), else what only the hub or the dialing side can know: the LoadBalancer
// Service's address, the DNS name to resolve, or nothing to dial at all (behind
// masquerade). Nil while the cluster has no active gateway or the address is not known
// yet.
func peerEndpoint(ep *straitv1.GatewayEndpoint, f *MemberFacts) *straitv1.PeerEndpoint {
	gw := f.activeGateway()
	if gw == nil {
		return nil
	}
	out := &straitv1.PeerEndpoint{
		Gateway:         gw.Spec.NodeName,
		IP:              gw.Spec.IP,
		Port:            gw.Spec.Port,
		PublicKey:       gw.Spec.PublicKey,
		HealthCheckIP:   gw.Spec.HealthCheckIP,
		HealthCheckIPv6: gw.Spec.HealthCheckIPv6,
		Driver:          gw.Spec.Driver,
	}
	typ := straitv1.EndpointInternalIP
	if ep != nil {
		typ = ep.Type
	}
	switch typ {
	case straitv1.EndpointLoadBalancer:
		out.IP = ""
		if f.GatewayService != nil {
			for _, in := range f.GatewayService.Status.LoadBalancer.Ingress {
				if a, err := netip.ParseAddr(in.IP); err == nil && a.Is4() {
					out.IP = a.String()
					break
				}
				if in.Hostname != "" {
					out.Hostname, out.RefreshInterval = in.Hostname, &metav1.Duration{Duration: straitv1.DefaultEndpointRefresh}
					break
				}
			}
		}
	case straitv1.EndpointDNSName:
		out.IP, out.Hostname = "", ep.DNSName
		out.RefreshInterval = &metav1.Duration{Duration: straitv1.DefaultEndpointRefresh}
		if ep.RefreshInterval != nil {
			out.RefreshInterval = ep.RefreshInterval
		}
	case straitv1.EndpointMasquerade:
		// The node's own address is no use to anyone outside: nothing dials it.
		out.IP, out.BehindMasquerade = "", true
	}
	if out.IP == "" && out.Hostname == "" && !out.BehindMasquerade {
		return nil
	}
	return out
}
