package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/plan"
)

// status.exports is capped at plan.MaxStatusExports; the Ready message and the
// strait_hub_exports gauge count every export. At 10,000 exports the envtest tests would
// spend minutes writing 10,000 ServiceExports and their conditions, so the status step is
// driven here directly with what two members that took every write would report.
func TestTenThousandExportsAreReportedInReadyAndGauge(t *testing.T) {
	const exports = 10000
	cs := &straitv1.ClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "strait-system", Generation: 3},
		Spec: straitv1.ClusterSetSpec{Clusters: []straitv1.ClusterSpec{
			{Name: "c1", PodCIDRs: []string{"10.8.0.0/16"}, ServiceCIDRs: []string{"10.88.0.0/16"}},
			{Name: "c2", PodCIDRs: []string{"10.9.0.0/16"}, ServiceCIDRs: []string{"10.99.0.0/16"}},
		}},
	}
	for i := range exports {
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: "app", Name: fmt.Sprintf("svc-%05d", i), Clusters: []string{"c1"}})
	}
	p, errs := plan.Compute(cs, nil)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := &ClusterSetReconciler{metrics: metrics, recorder: events.NewFakeRecorder(16)}
	conns := map[string]*conn{"c1": {name: "c1"}, "c2": {name: "c2"}}
	results := map[string]*memberResult{
		"c1": {inventory: map[string]int32{"Membership": 1, "Peer": 1, "ServiceExport": exports}},
		"c2": {inventory: map[string]int32{"Membership": 1, "Peer": 1}},
	}
	r.setStatus(cs, p, conns, results, records(nil).known(cs), time.Now())

	ready := apimeta.FindStatusCondition(cs.Status.Conditions, meta.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %+v, want True", ready)
	}
	if want := "2 clusters and 10000 exports in place"; ready.Message != want {
		t.Errorf("Ready message = %q, want %q", ready.Message, want)
	}
	if got := testutil.ToFloat64(metrics.exports.WithLabelValues(plan.ClusterSetLabel(clusterSetName(cs)))); got != exports {
		t.Errorf("strait_hub_exports = %v, want %d", got, exports)
	}
	if cs.Status.Summary.Exports != exports || len(cs.Status.Exports) != plan.MaxStatusExports || cs.Status.Summary.Clusters != "2/2" {
		t.Errorf("summary = %+v with %d listed exports; want %d exports, %d listed, clusters 2/2",
			cs.Status.Summary, len(cs.Status.Exports), exports, plan.MaxStatusExports)
	}
}
