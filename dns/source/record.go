package source

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/resolver"
)

// The records are what the source keeps of each object: only what the answers depend
// on, in the resolver's terms, with the strings that repeat across objects interned.
// The informers' typed objects are turned into records as they arrive and are not kept.

// objectKey names a namespaced object.
type objectKey struct{ namespace, name string }

// importRecord is what the answers need of a ServiceImport.
type importRecord struct {
	objectKey
	headless bool
	ports    []resolver.Port
	// ips are the clusterset IPs (spec.ips) that parse.
	ips []netip.Addr
}

// sliceRecord is what the answers need of an EndpointSlice labelled with an MCS
// source cluster: the service it belongs to (its service-name label) and its source,
// keyed by the slice's name (sliceKey), with the endpoints ordered by address.
// PublishNotReady is left to the store, which knows whether the service is headless.
type sliceRecord struct {
	objectKey
	service string
	src     resolver.ClusterSource
}

// peerRecord is what the answers need of a Peer.
type peerRecord struct {
	objectKey
	cluster   string
	connected bool
}

// membershipRecord is what the answers need of a Membership.
type membershipRecord struct {
	objectKey
	clusterID string
	dns       straitv1.DNSSpec
}

// maxInterned bounds an interner: past it, it forgets what it holds and starts over, so
// that namespaces and port lists that come and go cannot grow it without end.
const maxInterned = 1 << 16

// interner hands out one copy of each value it has seen: namespaces, cluster names, port
// lists. It is safe for concurrent use.
type interner struct {
	mu      sync.Mutex
	strings map[string]string
	ports   map[string][]resolver.Port
}

func newInterner() *interner {
	return &interner{strings: map[string]string{}, ports: map[string][]resolver.Port{}}
}

func (in *interner) str(s string) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.strLocked(s)
}

func (in *interner) strLocked(s string) string {
	if v, ok := in.strings[s]; ok {
		return v
	}
	if len(in.strings) >= maxInterned {
		clear(in.strings)
	}
	// A copy, so that a substring does not keep the string it was cut from.
	s = strings.Clone(s)
	in.strings[s] = s
	return s
}

// sliceKey is the key of the slice named name among the sources of service: the part of
// the name after the service's, interned, when the name starts with the service's name
// and a dash (as the hub names slices: <service>-<cluster>); the name otherwise. No
// Kubernetes name starts with a dash, so the two kinds of key do not collide.
func (in *interner) sliceKey(service, name string) string {
	if service != "" && len(name) > len(service) && name[len(service)] == '-' && strings.HasPrefix(name, service) {
		return in.str(name[len(service):])
	}
	return name
}

// sliceName is the name of the slice keyed key among the sources of service.
func sliceName(service, key string) string {
	if strings.HasPrefix(key, "-") {
		return service + key
	}
	return key
}

// isSlice says whether key names the slice name among the sources of service.
func isSlice(service, key, name string) bool {
	if strings.HasPrefix(key, "-") {
		return len(name) == len(service)+len(key) && strings.HasPrefix(name, service) && strings.HasSuffix(name, key)
	}
	return key == name
}

// portList is the interned copy of ports; nil when there are none.
func (in *interner) portList(ports []resolver.Port) []resolver.Port {
	if len(ports) == 0 {
		return nil
	}
	var b strings.Builder
	for _, p := range ports {
		b.WriteString(p.Name)
		b.WriteByte('/')
		b.WriteString(p.Protocol)
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(int(p.Port)))
		b.WriteByte(',')
	}
	key := b.String()
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.ports[key]; ok {
		return v
	}
	if len(in.ports) >= maxInterned {
		clear(in.ports)
	}
	out := slices.Clone(ports)
	for i := range out {
		out[i].Name, out[i].Protocol = in.strLocked(out[i].Name), in.strLocked(out[i].Protocol)
	}
	in.ports[key] = out
	return out
}

// record turns an object the source watches into its record; other values (records
// already, or unknown types) are returned as they are.
func (in *interner) record(obj any) any {
	switch o := obj.(type) {
	case *mcsv1.ServiceImport:
		return in.importRecord(o)
	case *discoveryv1.EndpointSlice:
		return in.sliceRecord(o)
	case *straitv1.Peer:
		return &peerRecord{objectKey: objectKey{o.Namespace, o.Name}, cluster: in.str(o.Spec.ClusterID), connected: peerConnected(o)}
	case *straitv1.Membership:
		return &membershipRecord{objectKey: objectKey{o.Namespace, o.Name}, clusterID: o.Spec.ClusterID, dns: o.Spec.DNS}
	}
	return obj
}

func (in *interner) importRecord(si *mcsv1.ServiceImport) *importRecord {
	r := &importRecord{objectKey: objectKey{in.str(si.Namespace), si.Name}, headless: si.Spec.Type == mcsv1.Headless}
	if len(si.Spec.Ports) > 0 {
		ports := make([]resolver.Port, 0, len(si.Spec.Ports))
		for _, p := range si.Spec.Ports {
			ports = append(ports, resolver.Port{Name: p.Name, Protocol: string(p.Protocol), Port: uint16(p.Port)})
		}
		r.ports = in.portList(ports)
	}
	for _, ip := range si.Spec.IPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			r.ips = append(r.ips, a)
		}
	}
	return r
}

// sliceRecord keeps of an EndpointSlice its labels, ports and endpoints. An endpoint
// whose ready condition is unset counts as ready, as in Kubernetes; addresses that do not
// parse are left out.
func (in *interner) sliceRecord(sl *discoveryv1.EndpointSlice) *sliceRecord {
	r := &sliceRecord{objectKey: objectKey{in.str(sl.Namespace), sl.Name}, service: sl.Labels[mcsv1.LabelServiceName]}
	r.src = resolver.ClusterSource{Cluster: in.str(sl.Labels[mcsv1.LabelSourceCluster]), Key: in.sliceKey(r.service, sl.Name)}
	if len(sl.Ports) > 0 {
		ports := make([]resolver.Port, 0, len(sl.Ports))
		for _, p := range sl.Ports {
			rp := resolver.Port{Protocol: "TCP"}
			if p.Name != nil {
				rp.Name = *p.Name
			}
			if p.Protocol != nil {
				rp.Protocol = string(*p.Protocol)
			}
			if p.Port != nil {
				rp.Port = uint16(*p.Port)
			}
			ports = append(ports, rp)
		}
		r.src.Ports = in.portList(ports)
	}
	n := 0
	for _, ep := range sl.Endpoints {
		n += len(ep.Addresses)
	}
	if n > 0 {
		eps := make([]resolver.Endpoint, 0, n)
		for _, ep := range sl.Endpoints {
			ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
			host := ""
			if ep.Hostname != nil {
				host = *ep.Hostname
			}
			for _, a := range ep.Addresses {
				addr, err := netip.ParseAddr(a)
				if err != nil {
					continue
				}
				eps = append(eps, resolver.Endpoint{Addr: addr, Hostname: host, Ready: ready})
			}
		}
		slices.SortFunc(eps, func(a, b resolver.Endpoint) int { return a.Addr.Compare(b.Addr) })
		if len(eps) > 0 {
			r.src.Endpoints = slices.Clip(eps)
		}
	}
	return r
}

// peerConnected tells whether a Peer's cluster answers: its Connected condition is not
// False; without that condition, by its state (anything but Connecting or Error), so
// that a clusterset without health checks still resolves.
func peerConnected(p *straitv1.Peer) bool {
	if c := apimeta.FindStatusCondition(p.Status.Conditions, straitv1.ConditionConnected); c != nil {
		return c.Status != metav1.ConditionFalse
	}
	return p.Status.State != "Connecting" && p.Status.State != "Error"
}

// notReady says whether any endpoint of src is not ready: in a headless slice the hub
// lists those only for services with publishNotReadyAddresses.
func notReady(src *resolver.ClusterSource) bool {
	for i := range src.Endpoints {
		if !src.Endpoints[i].Ready {
			return true
		}
	}
	return false
}
