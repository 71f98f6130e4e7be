package plan

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Observed is what the hub (or `strait render --observed`) saw in the members, keyed by
// cluster name. A member missing from the map was not observed: its imports keep nothing
// from it and its allocations are computed as if new, except where git pins them.
type Observed map[string]*MemberFacts

// MemberFacts is what one member holds that the plan depends on: for a member the hub
// cannot reach now, what it last saw there. Whether it reaches the member is the hub's
// own observation and no input of the plan.
type MemberFacts struct {
	// KubeSystemUID is the UID of the member's kube-system namespace: which cluster the
	// kubeconfig reaches, however it reaches it. Empty when it was not read. Two clusters
	// of one UID are one cluster registered twice, which Compute refuses.
	KubeSystemUID types.UID

	// Gateways published by the member's agents.
	Gateways []straitv1.Gateway
	// Peers in the member, for the connection status the active gateway reports.
	Peers []straitv1.Peer
	// Services of exported services (and, under the MemberExports policy, of services
	// exported in the member).
	Services []corev1.Service
	// EndpointSlices of those services, as Kubernetes manages them (label
	// kubernetes.io/service-name), not the MCS slices Strait writes.
	EndpointSlices []discoveryv1.EndpointSlice
	// ServiceExports in the member: the hub's and, where people made them, their own.
	ServiceExports []mcsv1.ServiceExport

	// GatewayService is the Service of type LoadBalancer the member's gateways are
	// reached through (spec.clusters[].gateway.endpoint type LoadBalancer); nil otherwise
	// or while it does not exist.
	GatewayService *corev1.Service

	// Membership and GlobalIngresses are the allocations the member holds; the hub reads
	// them back so that a rebuilt hub renumbers nothing.
	Membership      *straitv1.Membership
	GlobalIngresses []straitv1.GlobalIngress
}

// activeGateway returns the active gateway a member publishes: the most recent heartbeat
// wins if more than one claims to be active, then the node name.
func (f *MemberFacts) activeGateway() *straitv1.Gateway {
	if f == nil {
		return nil
	}
	var best *straitv1.Gateway
	for i := range f.Gateways {
		g := &f.Gateways[i]
		if g.Spec.HAState != straitv1.HAActive {
			continue
		}
		if best == nil || newerHeartbeat(g, best) {
			best = g
		}
	}
	return best
}

func newerHeartbeat(a, b *straitv1.Gateway) bool {
	ta, tb := a.Status.LastHeartbeat, b.Status.LastHeartbeat
	switch {
	case ta != nil && tb == nil:
		return true
	case ta == nil && tb != nil:
		return false
	case ta != nil && tb != nil && !ta.Equal(tb):
		return tb.Before(ta)
	}
	return a.Name < b.Name
}

func (f *MemberFacts) service(ns, name string) *corev1.Service {
	if f == nil {
		return nil
	}
	for i := range f.Services {
		if s := &f.Services[i]; s.Namespace == ns && s.Name == name {
			return s
		}
	}
	return nil
}

// endpoints lists the endpoints of a service from its EndpointSlices, deduplicated by
// address, in a stable order.
func (f *MemberFacts) endpoints(ns, name string) []discoveryv1.Endpoint {
	if f == nil {
		return nil
	}
	var out []discoveryv1.Endpoint
	seen := map[string]bool{}
	for i := range f.EndpointSlices {
		s := &f.EndpointSlices[i]
		if s.Namespace != ns || s.Labels[discoveryv1.LabelServiceName] != name {
			continue
		}
		for _, ep := range s.Endpoints {
			if len(ep.Addresses) == 0 || seen[ep.Addresses[0]] {
				continue
			}
			seen[ep.Addresses[0]] = true
			out = append(out, ep)
		}
	}
	return out
}

// slicePorts returns the ports of a service's EndpointSlices (target ports, by name).
func (f *MemberFacts) slicePorts(ns, name string) []discoveryv1.EndpointPort {
	if f == nil {
		return nil
	}
	for i := range f.EndpointSlices {
		s := &f.EndpointSlices[i]
		if s.Namespace == ns && s.Labels[discoveryv1.LabelServiceName] == name && len(s.Ports) > 0 {
			return s.Ports
		}
	}
	return nil
}

func (f *MemberFacts) serviceExport(ns, name string) *mcsv1.ServiceExport {
	if f == nil {
		return nil
	}
	for i := range f.ServiceExports {
		if e := &f.ServiceExports[i]; e.Namespace == ns && e.Name == name {
			return e
		}
	}
	return nil
}

func isReady(ep discoveryv1.Endpoint) bool {
	return ep.Conditions.Ready == nil || *ep.Conditions.Ready
}
