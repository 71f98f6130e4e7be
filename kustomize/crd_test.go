package kustomize

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/clusters"
)

// TestNewClusterSetIsInProgressUntilTheHubSeesIt: a ClusterSet no hub has looked at yet
// reads back with status.observedGeneration 0 below its generation, so kstatus (Flux's
// wait, kubectl wait) counts it in progress. Without that, a ClusterSet that Flux has
// just created (a new hub, a new clusterset) had no status at all, which kstatus counts
// as current: the Kustomization was Ready before the hub had reached any member.
func TestNewClusterSetIsInProgressUntilTheHubSeesIt(t *testing.T) {
	c := clusters.NewCluster(t)
	ctx := context.Background()
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "examples", "clusterset", "basic", "clusterset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cs := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &cs.Object); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: straitv1.SystemNamespace}}
	if err := c.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := c.Client.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(cs.GroupVersionKind())
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(cs), got); err != nil {
		t.Fatal(err)
	}
	observed, found, err := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
	if err != nil || !found || observed != 0 || got.GetGeneration() != 1 {
		t.Errorf("a new ClusterSet reads back with status.observedGeneration %d (found %v, %v) and generation %d; want 0 below 1",
			observed, found, err, got.GetGeneration())
	}
}
