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
//
// A *MemberFacts handed to Compute or a Planner is never changed afterwards: a plan
// shares its slices and maps, and a Planner takes the same pointer at its next plan for
// the same facts, which it neither indexes again nor compares object by object. A
// member whose facts changed comes as a new *MemberFacts; one that did not may come as
// the same or as a new one with the same content.
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

// memberIndex finds a member's facts of one service by namespace/name: the plan looks
// up every export in every cluster that exports it, and a scan of the facts per lookup
// made a member exporting 5,000 services cost a second per plan (2 clusters × 10,000
// exports: 1.0 s, against 0.1 s for the same exports over 255 clusters). Built once per
// facts: a Planner keeps it while a member's facts are the same *MemberFacts. It
// allocates its maps and nothing per object.
type memberIndex struct {
	f        *MemberFacts
	services map[types.NamespacedName]int32
	exports  map[types.NamespacedName]int32
	// slices holds each service's first and last EndpointSlice, nextSlice the next of
	// the same service after each (-1: none): its slices in the facts' order, as
	// endpoints are deduplicated first come, first kept.
	slices    map[types.NamespacedName]sliceRange
	nextSlice []int32
}

type sliceRange struct{ first, last int32 }

func indexFacts(f *MemberFacts) *memberIndex {
	if f == nil {
		return nil
	}
	x := &memberIndex{f: f, services: make(map[types.NamespacedName]int32, len(f.Services)),
		exports: make(map[types.NamespacedName]int32, len(f.ServiceExports)),
		slices:  make(map[types.NamespacedName]sliceRange, len(f.EndpointSlices)), nextSlice: make([]int32, len(f.EndpointSlices))}
	for i := range f.Services {
		k := types.NamespacedName{Namespace: f.Services[i].Namespace, Name: f.Services[i].Name}
		if _, dup := x.services[k]; !dup {
			x.services[k] = int32(i)
		}
	}
	for i := range f.ServiceExports {
		k := types.NamespacedName{Namespace: f.ServiceExports[i].Namespace, Name: f.ServiceExports[i].Name}
		if _, dup := x.exports[k]; !dup {
			x.exports[k] = int32(i)
		}
	}
	for i := range f.EndpointSlices {
		s := &f.EndpointSlices[i]
		x.nextSlice[i] = -1
		svc := s.Labels[discoveryv1.LabelServiceName]
		if svc == "" {
			continue
		}
		k := types.NamespacedName{Namespace: s.Namespace, Name: svc}
		r, ok := x.slices[k]
		if ok {
			x.nextSlice[r.last] = int32(i)
		} else {
			r.first = int32(i)
		}
		r.last = int32(i)
		x.slices[k] = r
	}
	return x
}

// service is the Service key, or nil. A nil index (a cluster not observed) holds
// nothing.
func (x *memberIndex) service(key types.NamespacedName) *corev1.Service {
	if x == nil {
		return nil
	}
	if i, ok := x.services[key]; ok {
		return &x.f.Services[i]
	}
	return nil
}

// firstOf is the index of the first EndpointSlice of the service key in the facts, -1
// when it has none; nextSlice[i] the next one's after i.
func (x *memberIndex) firstOf(key types.NamespacedName) int32 {
	if x == nil {
		return -1
	}
	if r, ok := x.slices[key]; ok {
		return r.first
	}
	return -1
}

// endpoints lists the endpoints of a service from its EndpointSlices, deduplicated by
// address, in a stable order.
func (x *memberIndex) endpoints(key types.NamespacedName) []discoveryv1.Endpoint {
	var out []discoveryv1.Endpoint
	seen := map[string]bool{}
	for i := x.firstOf(key); i >= 0; i = x.nextSlice[i] {
		for _, ep := range x.f.EndpointSlices[i].Endpoints {
			if len(ep.Addresses) == 0 || seen[ep.Addresses[0]] {
				continue
			}
			seen[ep.Addresses[0]] = true
			out = append(out, ep)
		}
	}
	return out
}

// slicePorts are the ports of a service's first EndpointSlice that has any.
func (x *memberIndex) slicePorts(key types.NamespacedName) []discoveryv1.EndpointPort {
	for i := x.firstOf(key); i >= 0; i = x.nextSlice[i] {
		if ports := x.f.EndpointSlices[i].Ports; len(ports) > 0 {
			return ports
		}
	}
	return nil
}

// serviceExport is the ServiceExport key, or nil.
func (x *memberIndex) serviceExport(key types.NamespacedName) *mcsv1.ServiceExport {
	if x == nil {
		return nil
	}
	if i, ok := x.exports[key]; ok {
		return &x.f.ServiceExports[i]
	}
	return nil
}

func isReady(ep discoveryv1.Endpoint) bool {
	return ep.Conditions.Ready == nil || *ep.Conditions.Ready
}
