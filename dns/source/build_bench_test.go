package source

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// BenchmarkBuild is one snapshot rebuild of a member with 10,000 imports exported by
// three clusters: what every (debounced) change costs.
func BenchmarkBuild(b *testing.B) {
	yes, no := true, false
	st := &State{
		Membership: &straitv1.Membership{Spec: straitv1.MembershipSpec{ClusterID: "c1"}},
		Peers:      []straitv1.Peer{peer("c2", "", nil), peer("c3", "", nil)},
	}
	for i := range 10000 {
		ns, name := fmt.Sprintf("ns-%d", i/100), fmt.Sprintf("svc-%d", i)
		st.Imports = append(st.Imports, mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP, Ports: []mcsv1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}})
		for k, c := range []string{"c1", "c2", "c3"} {
			ready := &yes
			if k == 0 {
				ready = &no
			}
			st.Slices = append(st.Slices, slice(ns, name, c, ep(fmt.Sprintf("10.%d.%d.%d", 101+k, i/250, i%250+1), ready, "")))
		}
	}
	b.ReportAllocs()
	prev := Build(st, Overrides{}, 0, nil)
	for b.Loop() {
		prev = Build(st, Overrides{}, 1, prev)
	}
	if prev.Services() != 10000 {
		b.Fatalf("%d services", prev.Services())
	}
}
