package webhook

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/straitnet/strait/test/corpus"
)

// applyDryRun sends a ClusterSet file to the hub the way `kubectl apply --dry-run=server`
// does: YAML converted to JSON on the client, strict field validation, nothing stored.
// Both the CRD's schema and the webhook judge it.
func applyDryRun(t *testing.T, data []byte) error {
	t.Helper()
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("converting to JSON: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	u.SetNamespace(env.HubNamespace)
	return env.Hub.Client.Create(context.Background(), u, client.DryRunAll, client.FieldValidation("Strict"))
}

// Every ClusterSet of the invalid corpus that `strait render` refuses is refused by a
// real API server too, by the CRD's schema or by the webhook, and the refusal names each
// field the corpus file wants named.
func TestAPIServerRefusesEveryInvalidClusterSet(t *testing.T) {
	needHub(t)
	cases, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			err := applyDryRun(t, c.Data)
			if err == nil {
				t.Fatal("the API server accepted it")
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) && !apierrors.IsForbidden(err) {
				t.Fatalf("refused for another reason than the object: %v", err)
			}
			if missing := corpus.Missing(err.Error(), c.Want); len(missing) > 0 {
				t.Errorf("the refusal does not name %v:\n%v", missing, err)
			}
		})
	}
}

// Every example ClusterSet is accepted by the CRD's schema and the webhook.
func TestAPIServerAcceptsEveryExample(t *testing.T) {
	needHub(t)
	files, err := filepath.Glob("../examples/clusterset/*/clusterset.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := applyDryRun(t, data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
