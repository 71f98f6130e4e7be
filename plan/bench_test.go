package plan

import (
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// bigClusterSet is 255 clusters on globalnet exporting 10,000 ClusterSetIP services,
// spread round-robin over the clusters, each with two ready endpoints.
func bigClusterSet(b testing.TB) (*straitv1.ClusterSet, Observed) {
	b.Helper()
	const clusters, exports = 255, 10000
	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "strait-system"},
		Spec: straitv1.ClusterSetSpec{Globalnet: &straitv1.GlobalnetSpec{Enabled: true}}}
	obs := Observed{}
	for i := 0; i < clusters; i++ {
		name := fmt.Sprintf("c%03d", i)
		cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{Name: name,
			PodCIDRs: []string{"10.0.0.0/16"}, ServiceCIDRs: []string{"10.1.0.0/16"}})
		obs[name] = &MemberFacts{Gateways: []straitv1.Gateway{{Spec: straitv1.GatewaySpec{
			NodeName: name + "-gw", HAState: straitv1.HAActive, IP: fmt.Sprintf("192.0.2.%d", i), Port: 51871, Driver: straitv1.CableWireGuard}}}}
	}
	ready := true
	for i := 0; i < exports; i++ {
		c := cs.Spec.Clusters[i%clusters].Name
		ns, name := fmt.Sprintf("ns%d", i%100), fmt.Sprintf("svc%d", i)
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: ns, Name: name, Clusters: []string{c}})
		f := obs[c]
		f.Services = append(f.Services, corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{ClusterIP: fmt.Sprintf("10.1.%d.%d", i/250%250, i%250+1), Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
		f.EndpointSlices = append(f.EndpointSlices, discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name + "-abc", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{fmt.Sprintf("10.0.%d.%d", i/250%250, i%250+1)}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
				{Addresses: []string{fmt.Sprintf("10.0.%d.%d", i/250%250+100, i%250+1)}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
			}})
	}
	return cs, obs
}

// BenchmarkCompute: validation, export resolution and globalnet IPAM for the whole
// clusterset (what the hub does once per reconcile).
func BenchmarkCompute(b *testing.B) {
	cs, obs := bigClusterSet(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, errs := Compute(cs, obs); len(errs) > 0 {
			b.Fatal(errs.ToAggregate())
		}
	}
}

// BenchmarkMemberObjects: materializing one member's objects (Membership, 254 Peers,
// its GlobalIngresses, 10,000 ServiceImports and 10,000 EndpointSlices). The hub does
// this once per member per reconcile.
func BenchmarkMemberObjects(b *testing.B) {
	cs, obs := bigClusterSet(b)
	p, errs := Compute(cs, obs)
	if len(errs) > 0 {
		b.Fatal(errs.ToAggregate())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if objs := p.Objects("c007"); len(objs) < 20000 {
			b.Fatalf("only %d objects", len(objs))
		}
	}
}

// TestBigClusterSetFitsInEtcd: a ClusterSet with 255 clusters and 10,000 exports, with
// the status the plan implies, stays well under etcd's ~1.5 MB object limit, and so do
// the largest member objects.
func TestBigClusterSetFitsInEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10,000-export clusterset")
	}
	cs, obs := bigClusterSet(t)
	p, errs := Compute(cs, obs)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	cs.Status = p.Status
	const limit = 1536 * 1024
	data, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > limit*3/4 {
		t.Errorf("ClusterSet with status is %d bytes, want under %d", len(data), limit*3/4)
	}
	for _, o := range p.Objects("c000") {
		d, _ := json.Marshal(o)
		if len(d) > 64*1024 {
			t.Errorf("%T %s is %d bytes", o, o.GetName(), len(d))
		}
	}
	t.Logf("ClusterSet with 10,000 exports and status: %d bytes", len(data))
}
