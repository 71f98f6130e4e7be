package argocd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	labargocd "github.com/straitnet/strait/lab/argocd"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

// applicationCRD returns the path of Argo CD's Application CRD in the module cache: of the
// release the lab runs (test/argocdbin pins it; lab/argocd.Locate downloads its module zip
// with the Go toolchain that wrapper names, since the release needs a newer Go than
// Strait's). Argo CD is no dependency of Strait.
func applicationCRD(t *testing.T) string {
	t.Helper()
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r, err := labargocd.Locate(context.Background(), filepath.Join(root, "test", "argocdbin"))
	if err != nil {
		require.Skip(t, "the pinned Argo CD release: %v", err)
	}
	return filepath.Join(r.Source, "manifests", "crds", "application-crd.yaml")
}

func decodeFile(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatal(err)
	}
	return u
}

// application.yaml is a valid Application by Argo CD's own schema, judged by a real API
// server with that CRD installed (a server-side dry run with strict field validation, as
// `kubectl apply --dry-run=server` sends it); a broken copy is refused, so the schema
// really judges it.
func TestApplicationExampleMatchesArgoCDsSchema(t *testing.T) {
	crd := applicationCRD(t)
	c := clusters.NewCluster(t)
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: []string{crd}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("installing Argo CD's Application CRD: %v", err)
	}
	ctx := context.Background()
	app := decodeFile(t, "application.yaml")
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app.GetNamespace()}}); err != nil {
		t.Fatal(err)
	}
	dryRun := func(u *unstructured.Unstructured) error {
		return c.Client.Create(ctx, u.DeepCopy(), client.DryRunAll, client.FieldValidation("Strict"))
	}
	if err := dryRun(app); err != nil {
		t.Fatalf("Argo CD's schema refuses application.yaml: %v", err)
	}

	typo := app.DeepCopy()
	if err := unstructured.SetNestedField(typo.Object, "main", "spec", "source", "targetRevison"); err != nil {
		t.Fatal(err)
	}
	if err := dryRun(typo); err == nil || !strings.Contains(err.Error(), "targetRevison") {
		t.Errorf("an unknown field is not refused: %v", err)
	}
	wrongType := app.DeepCopy()
	if err := unstructured.SetNestedField(wrongType.Object, "yes", "spec", "syncPolicy", "automated", "prune"); err != nil {
		t.Fatal(err)
	}
	if err := dryRun(wrongType); err == nil || !strings.Contains(err.Error(), "spec.syncPolicy.automated.prune") {
		t.Errorf("a string for a boolean is not refused: %v", err)
	}
}
