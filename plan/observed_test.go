package plan

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The index finds what a scan of the facts found: the first Service of a name, a
// service's endpoints over its slices in the facts' order, each address once (first
// kept), and the ports of its first slice that has any; nothing of other services or
// namespaces, and nothing in a member that was not observed.
func TestMemberIndexFindsWhatAScanFinds(t *testing.T) {
	slice := func(ns, svc string, ports []discoveryv1.EndpointPort, ips ...string) discoveryv1.EndpointSlice {
		s := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: svc}}, Ports: ports}
		for _, ip := range ips {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
		}
		return s
	}
	port := func(n int32) []discoveryv1.EndpointPort { return []discoveryv1.EndpointPort{{Port: &n}} }
	f := &MemberFacts{
		Services: []corev1.Service{svc("app", "web", "10.1.0.1"), svc("app", "web", "10.1.0.2"), svc("other", "web", "10.1.0.3")},
		EndpointSlices: []discoveryv1.EndpointSlice{
			slice("app", "web", nil, "10.0.0.1", "10.0.0.2"),
			slice("app", "db", port(5432), "10.0.9.9"),
			slice("other", "web", port(81), "10.0.8.8"),
			slice("app", "web", port(8080), "10.0.0.2", "10.0.0.3"),
			slice("app", "web", port(9090), "10.0.0.4"),
			{ObjectMeta: metav1.ObjectMeta{Namespace: "app"}, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.7.7"}}}},
		},
	}
	x := indexFacts(f)
	web := types.NamespacedName{Namespace: "app", Name: "web"}
	if s := x.service(web); s == nil || s.Spec.ClusterIP != "10.1.0.1" {
		t.Errorf("service app/web = %v, want the first one (10.1.0.1)", s)
	}
	var ips []string
	for _, ep := range x.endpoints(web) {
		ips = append(ips, ep.Addresses[0])
	}
	if got, want := fmt.Sprint(ips), "[10.0.0.1 10.0.0.2 10.0.0.3 10.0.0.4]"; got != want {
		t.Errorf("endpoints of app/web = %s, want %s", got, want)
	}
	if p := x.slicePorts(web); len(p) != 1 || *p[0].Port != 8080 {
		t.Errorf("slice ports of app/web = %v, want the first slice's that has any (8080)", p)
	}
	missing := types.NamespacedName{Namespace: "app", Name: "gone"}
	if x.service(missing) != nil || x.endpoints(missing) != nil || x.slicePorts(missing) != nil || x.serviceExport(web) != nil {
		t.Error("the index found something of a service the facts do not hold")
	}
	var unobserved *memberIndex = indexFacts(nil)
	if unobserved.service(web) != nil || unobserved.endpoints(web) != nil || unobserved.slicePorts(web) != nil || unobserved.serviceExport(web) != nil {
		t.Error("a member not observed holds something")
	}
}
