package plan

import (
	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// DefaultGatewayLabel selects gateway nodes when a cluster names no selector.
const DefaultGatewayLabel = "strait.io/gateway"

// WithDefaults returns a copy of spec with every defaulted field filled, the same
// defaults the CRD's OpenAPI schema applies, so `strait render` and the hub agree.
func WithDefaults(spec straitv1.ClusterSetSpec) straitv1.ClusterSetSpec {
	out := *spec.DeepCopy()
	if out.Cable.Driver == "" {
		out.Cable.Driver = straitv1.CableWireGuard
	}
	if out.Cable.Port == 0 {
		out.Cable.Port = DefaultPort(out.Cable.Driver)
	}
	if g := out.Globalnet; g != nil {
		if g.CIDRRange == "" {
			g.CIDRRange = straitv1.DefaultGlobalCIDRRange
		}
		if g.ClusterSize == 0 {
			g.ClusterSize = straitv1.DefaultClusterSize
		}
		if g.ClusterEgressIPs == 0 {
			g.ClusterEgressIPs = straitv1.DefaultClusterEgressIPs
		}
	}
	if out.ExportPolicy == "" {
		out.ExportPolicy = straitv1.ExportPolicyDeclared
	}
	if out.DNS.TTLSeconds == 0 {
		out.DNS.TTLSeconds = 5
	}
	if out.DNS.ServiceAnswer == "" {
		out.DNS.ServiceAnswer = straitv1.ServiceAnswerClusterSetIP
	}
	for i := range out.Exports {
		if out.Exports[i].ClusterSetIP == "" {
			out.Exports[i].ClusterSetIP = straitv1.ClusterSetIPAllClusters
		}
	}
	for i := range out.Clusters {
		if len(out.Clusters[i].Gateway.NodeSelector) == 0 {
			out.Clusters[i].Gateway.NodeSelector = map[string]string{DefaultGatewayLabel: "true"}
		}
	}
	return out
}

// DefaultPort is the UDP port of a cable driver when the ClusterSet names none.
func DefaultPort(d straitv1.CableDriver) int32 {
	switch d {
	case straitv1.CableIPsec:
		return straitv1.DefaultIPsecPort
	case straitv1.CableVXLAN:
		return straitv1.DefaultVXLANPort
	default:
		return straitv1.DefaultWireGuardPort
	}
}

// GlobalnetEnabled says whether spec turns globalnet on.
func GlobalnetEnabled(spec *straitv1.ClusterSetSpec) bool {
	return spec.Globalnet != nil && spec.Globalnet.Enabled
}
