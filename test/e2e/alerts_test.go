package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// The fault of the alerts' matrix that no test caused before: an export whose clusters
// disagree. The others fire their alerts in the tests that cause them for the data path
// or diagnose (matrix_test.go, faults_test.go, hubdown_test.go, diagnose_test.go).

// TestExportConflictAlerts: one commit exports a Service that is ClusterIP in c1 and
// headless in c2, and one that c1 names but does not have; the hub's Prometheus fires
// StraitExportConflict and StraitExportInvalid for the ClusterSet, each within its bound
// of the commit's being applied, and resolves both after the revert.
func TestExportConflictAlerts(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	alerts := env.WatchAlerts(t, labtest.HubCluster)
	alerts.Quiet(t, time.Minute, "StraitExportConflict", "StraitExportInvalid")
	env.RestoreClusterSetSpec(t)
	const name, missing = "conflicted", "nowhere"
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
		cs.Spec.Exports = append(cs.Spec.Exports,
			straitv1.ExportSpec{Namespace: lab.SampleNamespace, Name: name, Clusters: []string{"c1", "c2"}},
			straitv1.ExportSpec{Namespace: lab.SampleNamespace, Name: missing, Clusters: []string{"c1"}})
	}); err != nil {
		t.Fatal(err)
	}
	// Flux's sync is Flux's time: the bound starts when the ClusterSet is Ready at the
	// commit, its conflict and its invalid export counted by then.
	synced := time.Since(pushed)
	match := map[string]string{"clusterset": straitv1.SystemNamespace + ".demo"}
	alerts.Fired(t, "StraitExportConflict", match, pushed, synced+labtest.AlertBound(0, time.Minute))
	alerts.Fired(t, "StraitExportInvalid", match, pushed, synced+labtest.AlertBound(0, 5*time.Minute))
	reverted := time.Now()
	if _, err := env.CommitClusterSet(t, before, "e2e: take the conflicting and the invalid export out"); err != nil {
		t.Fatal(err)
	}
	alerts.Resolved(t, "StraitExportConflict", match, reverted, time.Since(reverted)+labtest.ResolveBound(0))
	alerts.Resolved(t, "StraitExportInvalid", match, reverted, time.Since(reverted)+labtest.ResolveBound(0))
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

// TestClusterSetStalledAlerts: a commit registers c1 a second time, under another name
// and a kubeconfig Secret of its own (a copy of c1's). Only a connection shows that both
// entries reach one API server, so the webhook lets the commit in and the hub marks the
// ClusterSet Stalled, writing nothing: StraitClusterSetStalled fires within its bound of
// the Stalled condition, every member keeps what it held (c1 still imports c2's
// export), and the alert resolves after the revert.
func TestClusterSetStalledAlerts(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	alerts := env.WatchAlerts(t, labtest.HubCluster)
	alerts.Quiet(t, time.Minute, "StraitClusterSetStalled")
	env.RestoreClusterSetSpec(t)
	before := env.RepoClusterSet(t)
	var c1 *straitv1.ClusterSpec
	cs := &straitv1.ClusterSet{}
	if err := yaml.UnmarshalStrict(before, cs); err != nil {
		t.Fatal(err)
	}
	for i := range cs.Spec.Clusters {
		if cs.Spec.Clusters[i].Name == "c1" && cs.Spec.Clusters[i].KubeConfig != nil && cs.Spec.Clusters[i].KubeConfig.SecretRef != nil {
			c1 = &cs.Spec.Clusters[i]
		}
	}
	if c1 == nil {
		t.Fatal("the lab's ClusterSet has no c1 with a kubeconfig Secret")
	}
	hub := env.HostClient(t, labtest.HubCluster).CoreV1().Secrets(cs.Namespace)
	orig, err := hub.Get(ctx, c1.KubeConfig.SecretRef.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const again = "c1-again"
	copied := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cs.Namespace, Name: again + "-kubeconfig"}, Data: orig.Data}
	if _, err := hub.Create(ctx, copied, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Delete(context.Background(), copied.Name, metav1.DeleteOptions{}) })
	gen := env.ClusterSet(t).Generation
	env.PushClusterSet(t, labtest.ChangeClusterSet(t, before, func(cs *straitv1.ClusterSet) {
		twin := c1.DeepCopy()
		twin.Name = again
		twin.KubeConfig.SecretRef.Name = copied.Name
		twin.PodCIDRs, twin.ServiceCIDRs = []string{"10.77.0.0/16"}, []string{"10.78.0.0/16"}
		cs.Spec.Clusters = append(cs.Spec.Clusters, *twin)
	}), "e2e: register c1 a second time")
	var stalled time.Time
	require.Eventually(t, 2*time.Minute, "the ClusterSet Stalled at the commit", func() error {
		got := env.ClusterSet(t)
		c := apimeta.FindStatusCondition(got.Status.Conditions, meta.StalledCondition)
		if got.Generation <= gen || c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation {
			return fmt.Errorf("generation %d, Stalled %+v", got.Generation, c)
		}
		if !strings.Contains(c.Message, again) {
			return fmt.Errorf("Stalled, but its message does not name %s: %s", again, c.Message)
		}
		stalled = time.Now()
		return nil
	})
	match := map[string]string{"clusterset": straitv1.SystemNamespace + ".demo"}
	alerts.Fired(t, "StraitClusterSetStalled", match, stalled, labtest.AlertBound(0, time.Minute))
	// The members keep their last good state.
	if err := env.Client(t, "c1").Get(ctx, client.ObjectKey{Namespace: lab.SampleNamespace, Name: lab.WhereamiCS}, &mcsv1.ServiceImport{}); err != nil {
		t.Errorf("c1's ServiceImport of %s while the ClusterSet is Stalled: %v", lab.WhereamiCS, err)
	}
	reverted := time.Now()
	if _, err := env.CommitClusterSet(t, before, "e2e: register c1 once"); err != nil {
		t.Fatal(err)
	}
	alerts.Resolved(t, "StraitClusterSetStalled", match, reverted, time.Since(reverted)+labtest.ResolveBound(0))
}
