package bigset

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/plan"
)

// The size issue 17 sets the hub's targets at; MaxClusters is the most the product
// accepts (the hub-scale issue's target).
const (
	Clusters    = 255
	Exports     = 10000
	MaxClusters = 1000
)

// LargeClusterSize is the globalnet clusterSize of a clusterset of more than 256
// members: 16,384 global addresses each fit 1,024 clusters in 242.0.0.0/8.
const LargeClusterSize = 16384

// GatewayIP is member i's active gateway address, from 198.18.0.0/15 (benchmarking).
func GatewayIP(i int) string { return fmt.Sprintf("198.18.%d.%d", i/250, i%250+1) }

// Name is the cluster name of member i: c000, c001, ...
func Name(i int) string { return fmt.Sprintf("c%03d", i) }

// New is a ClusterSet "big" in strait-system of clusters clusters on globalnet exporting
// exports ClusterSetIP services, spread round-robin over the clusters (export i lives in
// cluster i mod clusters, namespace ns<i mod 100>, name svc<i>), each service with two
// ready endpoints; and the facts observed in every member: an active gateway, the
// exported services and their slices, each with a UID and a resourceVersion as an API
// server gives them (ChangeServiceIP changes one as an API server would).
func New(clusters, exports int) (*straitv1.ClusterSet, plan.Observed) {
	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: straitv1.SystemNamespace},
		Spec: straitv1.ClusterSetSpec{Globalnet: &straitv1.GlobalnetSpec{Enabled: true}}}
	if clusters > 256 {
		// The default 65,536 global addresses per cluster fit 256 clusters in
		// 242.0.0.0/8; a larger clusterset sets a smaller size, as its validation says.
		cs.Spec.Globalnet.ClusterSize = LargeClusterSize
	}
	obs := plan.Observed{}
	for i := range clusters {
		name := Name(i)
		cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{Name: name,
			PodCIDRs: []string{"10.0.0.0/16"}, ServiceCIDRs: []string{"10.1.0.0/16"}})
		obs[name] = &plan.MemberFacts{Gateways: []straitv1.Gateway{{Spec: straitv1.GatewaySpec{
			NodeName: name + "-gw", HAState: straitv1.HAActive, IP: GatewayIP(i), Port: 51871, Driver: straitv1.CableWireGuard}}}}
	}
	for i := range exports {
		c := cs.Spec.Clusters[i%clusters].Name
		ns, name := fmt.Sprintf("ns%d", i%100), fmt.Sprintf("svc%d", i)
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: ns, Name: name, Clusters: []string{c}})
		f := obs[c]
		f.Services = append(f.Services, corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			UID: types.UID(fmt.Sprintf("svc-%d", i)), ResourceVersion: "1"},
			Spec: corev1.ServiceSpec{ClusterIP: ServiceIP(i), Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
		f.EndpointSlices = append(f.EndpointSlices, discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-abc", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: name},
				UID: types.UID(fmt.Sprintf("slice-%d", i)), ResourceVersion: "1"},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{fmt.Sprintf("10.0.%d.%d", i/250%250, i%250+1)}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}},
				{Addresses: []string{fmt.Sprintf("10.0.%d.%d", i/250%250+100, i%250+1)}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}},
			}})
	}
	return cs, obs
}

// ToggleServiceIP gives the first service member i of obs exports another cluster IP,
// ServiceIP(i) and 10.1.255.<i> in turn (ChangeServiceIP): a benchmark's change that
// holds however often -count runs it on the state the last run left.
func ToggleServiceIP(obs plan.Observed, i int) {
	ip := ServiceIP(i)
	if obs[Name(i)].Services[0].Spec.ClusterIP == ip {
		ip = fmt.Sprintf("10.1.255.%d", i)
	}
	ChangeServiceIP(obs, i, ip)
}

// ChangeServiceIP gives the first service member i of obs exports the cluster IP ip, as
// an API server would change it: a new object with a new resourceVersion, in a new list
// of the member's services, in new facts of the member, as the hub hands a changed
// member's (facts handed to a plan are never changed: plan.Observed).
func ChangeServiceIP(obs plan.Observed, i int, ip string) {
	f := *obs[Name(i)]
	svcs := slices.Clone(f.Services)
	svc := svcs[0].DeepCopy()
	rv, _ := strconv.Atoi(svc.ResourceVersion)
	svc.ResourceVersion = strconv.Itoa(rv + 1)
	svc.Spec.ClusterIP = ip
	svcs[0] = *svc
	f.Services = svcs
	obs[Name(i)] = &f
}

// MoveGateway gives member i's first gateway in obs the address ip, in new facts of the
// member, as the hub hands a changed member's.
func MoveGateway(obs plan.Observed, i int, ip string) {
	f := *obs[Name(i)]
	f.Gateways = slices.Clone(f.Gateways)
	f.Gateways[0].Spec.IP = ip
	obs[Name(i)] = &f
}

// ServiceIP is the cluster IP New gives export i's service.
func ServiceIP(i int) string { return fmt.Sprintf("10.1.%d.%d", i/250%250, i%250+1) }

func ptr[T any](v T) *T { return &v }

// WithPeers gives every member of obs a Peer for every other member, in state (as its
// active gateway reports them: "Connected", "Connecting", …), as a real clusterset's
// members hold.
func WithPeers(cs *straitv1.ClusterSet, obs plan.Observed, state string) {
	for i := range cs.Spec.Clusters {
		self := cs.Spec.Clusters[i].Name
		f := obs[self]
		f.Peers = f.Peers[:0]
		for j := range cs.Spec.Clusters {
			other := cs.Spec.Clusters[j].Name
			if other == self {
				continue
			}
			f.Peers = append(f.Peers, straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Name: other, Namespace: straitv1.SystemNamespace},
				Spec:   straitv1.PeerSpec{ClusterID: other},
				Status: straitv1.PeerStatus{State: state, LatencyMicros: 1234}})
		}
	}
}
