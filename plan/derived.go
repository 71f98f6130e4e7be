package plan

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// The clusterset IP of a ClusterSetIP import is the cluster IP of a Service the hub
// derives from the import in every member: selector-less, with one set of EndpointSlices
// per exporting cluster holding that cluster's ready endpoints, so that kube-proxy on
// every node balances connections to it over every cluster's backends. The member's API
// server allocates its cluster IP; strait dns writes it into the import's spec.ips
// (design-decisions.md, "The clusterset IP").

// maxSliceEndpoints is the most endpoints the API server takes in one EndpointSlice.
const maxSliceEndpoints = 1000

// DerivedServiceName is the name of the Service the hub derives, in every importing
// member, from the ClusterSetIP import of service name: "strait-<name>-<hash>", the name
// cut so that the whole is a DNS label. The prefix says whose it is in `kubectl get
// services`; the hash of the name keeps it from being the name of anybody's own Service
// (the hub would take that one over) and tells apart names that the cut makes equal.
func DerivedServiceName(name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	const keep = 63 - len("strait-") - len("-") - 8
	short := name
	if len(short) > keep {
		short = strings.TrimRight(short[:keep], "-")
	}
	return fmt.Sprintf("strait-%s-%08x", short, h.Sum32())
}

// importReady is the Ready condition of e's import in a member of view v. The hub
// cannot see whether a member has written the clusterset IP yet; it says whether the
// import is whole from its side.
func (e *exportPlan) importReady(v view) metav1.Condition {
	c := metav1.Condition{Type: string(mcsv1.ServiceImportConditionReady), Status: metav1.ConditionTrue,
		Reason: string(mcsv1.ServiceImportReasonReady)}
	var from []string
	for _, s := range e.sources {
		from = append(from, s.cluster)
	}
	has := v.services
	what := "service"
	if e.typ != mcsv1.ClusterSetIP {
		has, what = v.pods, "pod"
	}
	switch {
	case len(e.importFamilies(v)) == 0:
		c.Status, c.Reason = metav1.ConditionFalse, string(mcsv1.ServiceImportReasonIPFamilyNotSupported)
		c.Message = fmt.Sprintf("the import's IP families %v (the oldest export's) are none of this cluster's %s ranges' (%s): it is not imported here",
			e.props.ipFamilies, what, has)
	case e.typ != mcsv1.ClusterSetIP:
		c.Message = fmt.Sprintf("imported from %s; the name answers every exporting cluster's endpoints", strings.Join(from, ", "))
	default:
		c.Message = fmt.Sprintf("imported from %s; the clusterset IP is the cluster IP of Service %s", strings.Join(from, ", "),
			DerivedServiceName(e.name))
	}
	return c
}

// derivedService is the Service behind e's clusterset IP in a member of view v, nil
// when the member takes none of the import's families. It carries the import's ports,
// session affinity and the families the member takes (importFamilies: those of its
// service ranges, as its API server refuses any other, in the import's order; both
// required when both); no cluster IP (the member's API server allocates them), no
// selector (its slices are the hub's), and no traffic policies: it routes to every
// cluster's endpoints, whatever the exported service says (those are copied onto the
// ServiceImport for the people who read it).
func (e *exportPlan) derivedService(v view) *corev1.Service {
	pr := &e.props
	ipFamilies := e.importFamilies(v)
	if len(ipFamilies) == 0 {
		return nil
	}
	svc := &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      DerivedServiceName(e.name),
			Namespace: e.namespace,
			Labels:    map[string]string{straitv1.LabelServiceImport: e.name},
			Annotations: map[string]string{straitv1.AnnotationDerivedFrom: fmt.Sprintf(
				"the clusterset IP of ServiceImport %s/%s, balanced over every exporting cluster's endpoints; written by the Strait hub", e.namespace, e.name)},
		},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeClusterIP,
			SessionAffinity:       pr.sessionAffinity,
			SessionAffinityConfig: pr.sessionAffinityConfig,
			IPFamilies:            slices.Clone(ipFamilies),
		},
	}
	svc.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicySingleStack)
	if len(ipFamilies) > 1 {
		svc.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicyRequireDualStack)
	}
	svc.Spec.Ports, _ = e.derivedPorts()
	return svc
}

// servicePort is a port number and protocol, which is what a Service's port stands for.
type servicePort struct {
	port  int32
	proto corev1.Protocol
}

// derivedPorts are the derived Service's ports, and the name of each by port number and
// protocol. The import's ports are the union of the exports' by name (unionPorts), which
// a Service may not take as they are: with more than one port every port needs a name,
// and two names may stand for one port and protocol. So one port per port and protocol,
// named as its first name in the import's order, or, when it has none and is not
// alone, "<protocol>-<port>".
func (e *exportPlan) derivedPorts() ([]corev1.ServicePort, map[servicePort]string) {
	var out []corev1.ServicePort
	at := map[servicePort]int{}
	for _, p := range e.ports {
		k := servicePort{p.Port, p.Protocol}
		if _, ok := at[k]; ok {
			continue
		}
		at[k] = len(out)
		// A Service without selector ignores targetPort; the API server would default it to
		// the port, so it is said here, and an apply changes nothing.
		out = append(out, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, AppProtocol: p.AppProtocol,
			Port: p.Port, TargetPort: intstr.FromInt32(p.Port)})
	}
	if len(out) > 1 {
		taken := map[string]bool{}
		for _, p := range out {
			taken[p.Name] = true
		}
		for i := range out {
			if out[i].Name != "" {
				continue
			}
			name := strings.ToLower(string(out[i].Protocol)) + "-" + strconv.Itoa(int(out[i].Port))
			for n := 2; taken[name]; n++ {
				name = fmt.Sprintf("%s-%d-%d", strings.ToLower(string(out[i].Protocol)), out[i].Port, n)
			}
			out[i].Name, taken[name] = name, true
		}
	}
	names := make(map[servicePort]string, len(out))
	for k, i := range at {
		names[k] = out[i].Name
	}
	return out, names
}

// derivedSources are the sources whose endpoints stand behind e's clusterset IP in
// member: every one, or, for a PreferLocal export, the member's own while it has a
// ready endpoint. The hub follows the member's readiness, so the clusterset IP fails
// over to the other clusters within a pass of the hub once the last local endpoint
// goes, and back once one is ready again.
func (e *exportPlan) derivedSources(member string) []*exportSource {
	if e.preferLocal {
		if own := e.source(member); own != nil && own.anyReady {
			return []*exportSource{own}
		}
	}
	return e.sources
}

// derivedSlices are source s's endpoints behind e's clusterset IP, as member (of view
// v) sees them, a set per family of the derived Service: the pod IPs of its ready
// endpoints of that family with their target ports, if the member reaches s in it, or,
// for IPv4 under globalnet from another cluster, the one global IP of s's service with
// the service's ports (its gateway maps that to the service, whose kube-proxy then picks
// a pod). They carry the derived Service's name, and not the MCS source-cluster label:
// strait dns reads the slices with that label as per-cluster answers.
func (p *Plan) derivedSlices(member string, v view, e *exportPlan, s *exportSource) []*discoveryv1.EndpointSlice {
	service := DerivedServiceName(e.name)
	_, names := e.derivedPorts()
	// s's endpoints stand behind each derived port that s's own service has, the same
	// port number and protocol, named as the derived Service names it (kube-proxy pairs
	// them by name). A port s defines otherwise than the import (a conflict the oldest
	// export won) is not s's to serve, as the MCS API has it: connections to that port
	// go only to the clusters that expose it.
	byName := map[string]servicePort{}
	for _, sp := range s.ports {
		byName[sp.Name] = servicePort{sp.Port, protoOrTCP(sp.Protocol)}
	}
	portsOf := func(global bool) []discoveryv1.EndpointPort {
		var ports []discoveryv1.EndpointPort
		addPort := func(name string, target int32) {
			sp, ok := byName[name]
			if derived, found := names[sp]; ok && found {
				ports = append(ports, discoveryv1.EndpointPort{Name: ptr(derived), Port: ptr(target), Protocol: ptr(sp.proto)})
			}
		}
		if global {
			for _, sp := range s.ports {
				addPort(sp.Name, sp.Port)
			}
			return ports
		}
		for _, tp := range s.targetPorts {
			if tp.Port != nil {
				addPort(deref(tp.Name), *tp.Port)
			}
		}
		return ports
	}
	var out []*discoveryv1.EndpointSlice
	for _, f := range e.importFamilies(v) {
		var addrs []string
		alloc := p.alloc[s.cluster]
		global := alloc != nil && member != s.cluster && f == corev1.IPv4Protocol
		switch {
		case global:
			if g, ok := alloc.Services[e.key()]; ok && s.anyReady && g.Is4() {
				addrs = []string{g.String()}
			}
		case member == s.cluster || p.reaches(v, s.cluster, f):
			for _, ep := range s.endpoints {
				if ep.ready && familyOf(ep.ip) == f {
					addrs = append(addrs, ep.ip)
				}
			}
		}
		ports := portsOf(global)
		// An empty slice still says the cluster is there and has nothing ready.
		for chunk := 0; chunk == 0 || chunk*maxSliceEndpoints < len(addrs); chunk++ {
			part := addrs[chunk*maxSliceEndpoints : min(len(addrs), (chunk+1)*maxSliceEndpoints)]
			out = append(out, derivedSlice(service, e, s.cluster, chunk, part, ports, f))
		}
	}
	return out
}

func derivedSlice(service string, e *exportPlan, cluster string, chunk int, addrs []string,
	ports []discoveryv1.EndpointPort, f corev1.IPFamily) *discoveryv1.EndpointSlice {
	suffix := cluster
	if chunk > 0 {
		suffix += "-" + strconv.Itoa(chunk)
	}
	sl := &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      familySliceName(SliceName(service, suffix), f),
			Namespace: e.namespace,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: service,
				discoveryv1.LabelManagedBy:   EndpointSliceManagedBy,
				straitv1.LabelServiceImport:  e.name,
				straitv1.LabelSourceCluster:  cluster,
			},
		},
		AddressType: addressTypeOf(f),
		Ports:       ports,
	}
	for _, a := range addrs {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{a},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(true), Serving: ptr(true), Terminating: ptr(false)}})
	}
	return sl
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
