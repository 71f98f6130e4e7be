package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/test/labtest"
)

// The fault of the alerts' matrix that no test caused before: an export whose clusters
// disagree. The others fire their alerts in the tests that cause them for the data path
// or diagnose (matrix_test.go, faults_test.go, hubdown_test.go, diagnose_test.go).

// TestExportConflictAlerts: a commit exports a Service that is ClusterIP in c1 and
// headless in c2; the hub's Prometheus fires StraitExportConflict for the ClusterSet
// within its bound of the commit's being applied, and resolves it after the revert.
func TestExportConflictAlerts(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	alerts := env.WatchAlerts(t, labtest.HubCluster)
	alerts.Quiet(t, time.Minute, "StraitExportConflict")
	env.RestoreClusterSetSpec(t)
	const name = "conflicted"
	for cluster, clusterIP := range map[string]string{"c1": "", "c2": corev1.ClusterIPNone} {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: lab.SampleNamespace, Name: name},
			Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Selector: map[string]string{"app": lab.WhereamiCS},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
		}
		c := env.HostClient(t, cluster)
		if _, err := c.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", cluster, err)
		}
		t.Cleanup(func() { _ = c.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{}) })
	}
	before := env.RepoClusterSet(t)
	pushed := time.Now()
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: lab.SampleNamespace, Name: name, Clusters: []string{"c1", "c2"}})
	}); err != nil {
		t.Fatal(err)
	}
	// Flux's sync is Flux's time: the bound starts when the ClusterSet is Ready at the
	// commit, its conflict counted by then.
	synced := time.Since(pushed)
	match := map[string]string{"clusterset": straitv1.SystemNamespace + ".demo"}
	alerts.Fired(t, "StraitExportConflict", match, pushed, synced+labtest.AlertBound(0, time.Minute))
	reverted := time.Now()
	if _, err := env.CommitClusterSet(t, before, "e2e: take the conflicting export out"); err != nil {
		t.Fatal(err)
	}
	alerts.Resolved(t, "StraitExportConflict", match, reverted, time.Since(reverted)+labtest.ResolveBound(0))
}

// diagnoseNamesTheRunbook: `strait diagnose deployment --prometheus URL` (the hub's
// Prometheus on the host, through the lab daemon's forwarder) has a failing "alerts" line
// for the critical alert firing in cluster, naming its runbook.
func diagnoseNamesTheRunbook(t *testing.T, cluster, alert string) {
	t.Helper()
	rec, err := env.Lab.State().ReadRecord()
	if err != nil {
		t.Fatal(err)
	}
	// The federation brings the member's alert to the hub's Prometheus within a scrape.
	time.Sleep(2 * lab.PrometheusInterval)
	out, errOut, code := exitCode(t, env.Strait, "diagnose", "deployment", "--member-kubeconfig", cluster+"="+env.Lab.State().KubeconfigPath(cluster),
		"--prometheus", fmt.Sprintf("http://127.0.0.1:%d", rec.PrometheusHostPort()))
	line := strings.Join(fields(out, "alerts", cluster), " ")
	if code != 2 || !strings.Contains(line, "fail") || !strings.Contains(line, alert) || !strings.Contains(out, "runbooks.md#"+strings.ToLower(alert)) {
		t.Errorf("strait diagnose deployment --prometheus: exit %d, want 2 with a failing alerts line for %s in %s and its runbook:\n%s%s", code, alert, cluster, out, errOut)
	}
}
