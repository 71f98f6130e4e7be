package argocd

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

// argoCDModule is the Argo CD release whose Application CRD the example is checked
// against. Only its module zip is downloaded (go mod download, in a temporary module
// of its own): Argo CD is no dependency of Strait.
const argoCDModule = "github.com/argoproj/argo-cd/v3@v3.6.1"

// applicationCRD returns the path of Argo CD's Application CRD in the module cache,
// downloading the pinned module when it is not there.
func applicationCRD(t *testing.T) string {
	t.Helper()
	// The go command that runs the tests sets GOROOT for them; PATH may lack go.
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	cmd := exec.Command(goBin, "mod", "download", "-json", argoCDModule)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		require.Skip(t, "downloading %s: %v\n%s", argoCDModule, err, out)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s: %v %s", argoCDModule, err, mod.Error)
	}
	return filepath.Join(mod.Dir, "manifests", "crds", "application-crd.yaml")
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
