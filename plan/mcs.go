package plan

import (
	"fmt"
	"hash/fnv"
	"maps"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// EndpointSliceManagedBy is the endpointslice.kubernetes.io/managed-by value of the MCS
// EndpointSlices the hub writes, so that the EndpointSlice controller leaves them alone.
const EndpointSliceManagedBy = "strait-hub.strait.io"

// mcsObjects are the Multi-Cluster Services objects of one member: the ServiceExports
// declared for it in git, and a ServiceImport and an EndpointSlice per source cluster and
// IP family for every export that has at least one source.
func (p *Plan) mcsObjects(cluster string, exports []*exportPlan) []client.Object {
	var out []client.Object
	v := p.views[cluster]
	for _, e := range exports {
		if e.declared[cluster] {
			out = append(out, &mcsv1.ServiceExport{
				TypeMeta:   metav1.TypeMeta{APIVersion: mcsv1.GroupVersion.String(), Kind: "ServiceExport"},
				ObjectMeta: metav1.ObjectMeta{Name: e.name, Namespace: e.namespace},
			})
		}
		if len(e.sources) == 0 {
			continue
		}
		out = append(out, e.serviceImport(v, e.importReady(v)))
		families := e.importFamilies(v)
		for _, s := range e.sources {
			for _, f := range families {
				out = append(out, p.endpointSlice(cluster, v, e, s, f))
			}
		}
		if e.typ != mcsv1.ClusterSetIP {
			continue
		}
		if d := e.derivedService(v); d != nil {
			out = append(out, d)
			for _, s := range e.derivedSources(cluster) {
				for _, sl := range p.derivedSlices(cluster, v, e, s) {
					out = append(out, sl)
				}
			}
		}
	}
	return out
}

// serviceImport is the import of e as a member of view v holds it, with its Ready
// condition there (importReady; the hub fills in lastTransitionTime when it writes). Its
// IP families are the import's that the member takes (importFamilies), or, when it
// takes none, the import's (and the condition says IPFamilyNotSupported). Its spec.ips
// are not the hub's: the member writes the cluster IPs of the derived Service there (see
// derivedService), and the hub's apply, which never names the field, leaves them alone.
func (e *exportPlan) serviceImport(v view, ready metav1.Condition) *mcsv1.ServiceImport {
	pr := &e.props
	families := e.importFamilies(v)
	if len(families) == 0 {
		families = pr.ipFamilies
	}
	si := &mcsv1.ServiceImport{
		TypeMeta: metav1.TypeMeta{APIVersion: mcsv1.GroupVersion.String(), Kind: "ServiceImport"},
		ObjectMeta: metav1.ObjectMeta{Name: e.name, Namespace: e.namespace,
			Labels: maps.Clone(pr.labels), Annotations: maps.Clone(pr.annotations)},
		Spec: mcsv1.ServiceImportSpec{Type: e.typ, Ports: e.ports, IPFamilies: families,
			SessionAffinity: pr.sessionAffinity, SessionAffinityConfig: pr.sessionAffinityConfig,
			InternalTrafficPolicy: pr.internalTraffic, TrafficDistribution: pr.trafficDistribution},
	}
	for _, s := range e.sources {
		si.Status.Clusters = append(si.Status.Clusters, mcsv1.ClusterStatus{Cluster: s.cluster})
	}
	si.Status.Conditions = []metav1.Condition{ready}
	return si
}

// endpointSlice is what member (of view v) sees of source's export in family f, one of
// the import's that the member takes (importFamilies): only what it reaches of that
// family (the family routed between the two clusters; its own cluster it always
// reaches). For a ClusterSetIP service the slice holds one address, the service's
// cluster IP of its family (for IPv4 the global IP when seen from another cluster under
// globalnet), ready when any backend is ready. For a headless service it holds every
// endpoint of its family (ready ones, or all with publishNotReadyAddresses), with pod
// IPs or, for IPv4 under globalnet, their global IPs. A slice with nothing still says
// the cluster exports the service.
func (p *Plan) endpointSlice(member string, v view, e *exportPlan, s *exportSource, f corev1.IPFamily) *discoveryv1.EndpointSlice {
	remote := member != s.cluster
	reach := !remote || p.reaches(v, s.cluster, f)
	var alloc *ClusterAllocation
	if remote && f == corev1.IPv4Protocol {
		alloc = p.alloc[s.cluster]
	}
	slice := &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      familySliceName(SliceName(e.name, s.cluster), f),
			Namespace: e.namespace,
			Labels: map[string]string{
				mcsv1.LabelServiceName:     e.name,
				mcsv1.LabelSourceCluster:   s.cluster,
				discoveryv1.LabelManagedBy: EndpointSliceManagedBy,
			},
		},
		AddressType: addressTypeOf(f),
	}
	if !s.headless {
		for _, sp := range s.ports {
			slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Name: ptr(sp.Name), Port: ptr(sp.Port), Protocol: ptr(protoOrTCP(sp.Protocol))})
		}
		ip := s.clusterIPOf(f)
		if alloc != nil {
			ip = ""
			if g, found := alloc.Services[e.key()]; found {
				ip = g.String()
			}
		}
		if reach && ip != "" {
			slice.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(s.anyReady)}}}
		}
		return slice
	}
	slice.Ports = s.targetPorts
	for _, ep := range s.endpoints {
		if !reach || familyOf(ep.ip) != f || !ep.ready && !s.publishNotReady {
			continue
		}
		ip := ep.ip
		if alloc != nil {
			g, found := alloc.Endpoints[e.key()+"/"+ep.owner]
			if !found {
				continue
			}
			ip = g.String()
		}
		out := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(ep.ready)}}
		if ep.hostname != "" {
			out.Hostname = ptr(ep.hostname)
		}
		slice.Endpoints = append(slice.Endpoints, out)
	}
	return slice
}

// SliceName is the name of the EndpointSlice holding cluster's endpoints of service:
// "<service>-<cluster>", shortened with a hash when longer than a DNS label.
func SliceName(service, cluster string) string {
	n := service + "-" + cluster
	if len(n) <= 63 {
		return n
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(n))
	return fmt.Sprintf("%s-%08x", n[:54], h.Sum32())
}

func protoOrTCP(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

func ptr[T any](v T) *T { return &v }
