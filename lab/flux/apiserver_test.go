package flux

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

// The whole install is accepted by a real API server, and with Flux's CRDs from it the
// API server accepts the GitRepository and Kustomization the clusterset example tells a
// user to commit (a server-side dry run, as `kubectl apply --dry-run=server` does) and
// refuses one that breaks Flux's schema. No controller runs: envtest has no nodes.
func TestAPIServerTakesTheInstallAndTheExampleWiring(t *testing.T) {
	r := pinned(t)
	c := clusters.NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	objs, err := r.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}

	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"gitrepository.yaml", "sync.yaml"} {
		obj := readObject(t, filepath.Join(root, "examples", "clusterset", "flux", file))
		// A new CRD is served a moment after it is created.
		require.Eventually(t, 30*time.Second, "dry-run create of "+file, func() error {
			return c.Client.Create(ctx, obj.DeepCopy(), client.DryRunAll)
		})
	}

	bad := readObject(t, filepath.Join(root, "examples", "clusterset", "flux", "sync.yaml"))
	if err := unstructured.SetNestedField(bad.Object, "every ten minutes", "spec", "interval"); err != nil {
		t.Fatal(err)
	}
	err = c.Client.Create(ctx, bad, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "spec.interval") {
		t.Errorf("a Kustomization with interval %q: error %v, want Flux's schema to refuse spec.interval", "every ten minutes", err)
	}
}

func readObject(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return obj
}
