package plan

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// status.exports is capped so that the ClusterSet fits in etcd; the summary still counts
// every export, and the exports that need attention come first.
func TestTenThousandExportsAreCountedNotCapped(t *testing.T) {
	const exports = 10000
	cs := twoClusters()
	for i := range exports {
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: "app", Name: fmt.Sprintf("svc-%05d", i), Clusters: []string{"c1"}})
	}
	obs := Observed{"c1": {Services: []corev1.Service{svc("app", "svc-00000", "10.88.1.1", corev1.ServicePort{Port: 80})}}}
	p := mustCompute(t, cs, obs)
	if p.Status.Summary.Exports != exports {
		t.Errorf("summary.exports = %d, want %d", p.Status.Summary.Exports, exports)
	}
	if len(p.Status.Exports) != MaxStatusExports {
		t.Errorf("status.exports holds %d exports, want the cap %d", len(p.Status.Exports), MaxStatusExports)
	}
	// svc-00000, first by name, is the only healthy export: the cap leaves it out.
	for _, e := range p.Status.Exports {
		if e.Name == "svc-00000" {
			t.Errorf("the healthy export %s is listed before exports without a service", e.Name)
		}
	}
}
