package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/test/labtest"
)

// The faults of the fault matrix that fire their alerts here rather than in the tests
// that cause them for the data path (matrix_test.go, faults_test.go, hubdown_test.go):
// every strait dns pod of a member stopped, and an export whose clusters disagree.

// TestEveryStraitDNSDownAlerts: c1's strait dns is scaled to zero; c1's Prometheus fires
// StraitDNSDown within its bound of the last pod's going, and resolves it once strait dns
// is back. (One of two pods restarting alerts nothing: TestStraitDNSRestart.)
func TestEveryStraitDNSDownAlerts(t *testing.T) {
	env.Require(t)
	alerts := env.WatchAlerts(t, "c1")
	alerts.Quiet(t, time.Minute, "StraitDNSDown")
	n := len(env.StraitPods(t, "c1", labtest.DNSApp, ""))
	scale := func(n int) {
		env.Kubectl(t, "c1", "-n", straitv1.SystemNamespace, "scale", "deployment/strait-dns", fmt.Sprintf("--replicas=%d", n))
	}
	back := func() {
		scale(n)
		env.Kubectl(t, "c1", "-n", straitv1.SystemNamespace, "rollout", "status", "deployment/strait-dns", "--timeout=2m")
	}
	restored := false
	t.Cleanup(func() {
		if !restored {
			back()
		}
	})
	stopped := time.Now()
	scale(0)
	env.Kubectl(t, "c1", "-n", straitv1.SystemNamespace, "wait", "--for=delete", "pod", "-l", "app.kubernetes.io/name="+labtest.DNSApp, "--timeout=2m")
	// Stopping is the kubelet's and strait dns's own shutdown; the bound starts when the
	// last pod is gone (its scrape failed before that at the latest).
	gone := time.Since(stopped)
	alerts.Fired(t, "StraitDNSDown", nil, stopped, gone+labtest.AlertBound(0, time.Minute))
	back()
	restored = true
	// Back: the pods are Ready, and Prometheus discovers them by its watch of pods.
	alerts.Resolved(t, "StraitDNSDown", nil, time.Now(), labtest.ResolveBound(labtest.DiscoveryDetect))
}

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
