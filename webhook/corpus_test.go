package webhook

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/bigset"
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

// webhookDenied is how the API server words a refusal by the ClusterSet webhook (the
// webhook's name in start and in kustomize/hub).
const webhookDenied = `admission webhook "clustersets.strait.io" denied the request`

// Every ClusterSet of the invalid corpus that `strait render` refuses is refused by a
// real API server too, by the one its file names: a case labelled webhook by the webhook
// (the CRD's schema let it through), a case labelled schema by the API server itself
// before any webhook is asked. The refusal names each field the corpus file wants named.
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
			byWebhook := strings.Contains(err.Error(), webhookDenied)
			switch {
			case c.RefusedBy == corpus.ByWebhook && !byWebhook:
				t.Fatalf("refused before the webhook saw it (by the CRD's schema?); the corpus says the webhook refuses it:\n%v", err)
			case c.RefusedBy == corpus.BySchema && byWebhook:
				t.Fatalf("the CRD's schema let it through and the webhook refused it; the corpus says the schema refuses it:\n%v", err)
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

// The cases the webhook must refuse, given straight to its validator (without the CRD's
// defaults, which none of them depends on): each is refused, naming every wanted field.
// The test above shows the same through a real API server.
func TestValidatorRefusesTheWebhooksCases(t *testing.T) {
	cases, err := corpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cases {
		if c.RefusedBy != corpus.ByWebhook {
			continue
		}
		n++
		t.Run(c.Name, func(t *testing.T) {
			cs := &straitv1.ClusterSet{}
			if err := yaml.UnmarshalStrict(c.Data, cs); err != nil {
				t.Fatalf("the schema would refuse it already (decoding: %v); label it schema", err)
			}
			_, err := ClusterSetValidator{}.ValidateCreate(context.Background(), cs)
			if err == nil {
				t.Fatal("the webhook's validator accepted it")
			}
			if missing := corpus.Missing(err.Error(), c.Want); len(missing) > 0 {
				t.Errorf("the refusal does not name %v:\n%v", missing, err)
			}
		})
	}
	if n == 0 {
		t.Fatal("no case of the corpus is the webhook's to refuse")
	}
}

// The largest ClusterSet the product takes, 1,000 members (globalnet's clusterSize set
// to fit, as its error says) and 10,000 exports, passes the CRD's schema and its CEL
// rules (whose cost grows with the list limits) and the webhook of a real API server.
func TestAPIServerTakesAThousandMembers(t *testing.T) {
	needHub(t)
	cs, _ := bigset.New(bigset.MaxClusters, bigset.Exports)
	cs.Namespace = env.HubNamespace
	if err := env.Hub.Client.Create(context.Background(), cs, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
		t.Fatalf("%d members, %d exports: %v", len(cs.Spec.Clusters), len(cs.Spec.Exports), err)
	}
}
