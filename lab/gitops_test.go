package lab

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/clusters"
)

// exampleLab is the topology of an example's lab and the example's ClusterSet.
func exampleLab(t *testing.T, example string) (*topology.Lab, []byte) {
	t.Helper()
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, "examples", "clusterset", example, "clusterset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	lab, err := computeTopology(&Record{Spec: topology.DefaultSpec(example), ClusterSet: data})
	if err != nil {
		t.Fatal(err)
	}
	return lab, data
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// checkoutLab is a Lab of this checkout's kustomize/ and examples/, which touches
// nothing until a method is called.
func checkoutLab(t *testing.T) *Lab {
	return New(Options{StateDir: t.TempDir(), Kustomize: filepath.Join(repoRoot(t), "kustomize")})
}

// TestRepoIsLaidOutAsAUserKeepsOne: the lab's first commit holds the example's ClusterSet
// as it is, its kustomization, and the Flux wiring pointing at the lab's git server and
// at clusterset/.
func TestRepoIsLaidOutAsAUserKeepsOne(t *testing.T) {
	lab, data := exampleLab(t, "basic")
	files, err := repoFiles(data, &fluxSync{l: checkoutLab(t), t: lab})
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(files))
	want := []string{"README.md", "clusterset/clusterset.yaml", "clusterset/kustomization.yaml",
		"flux/gitrepository.yaml", "flux/kustomization.yaml", "flux/sync.yaml"}
	if !slices.Equal(names, want) {
		t.Errorf("repo files %v, want %v", names, want)
	}
	if string(files[RepoClusterSet]) != string(data) {
		t.Errorf("%s is not the example's file byte for byte", RepoClusterSet)
	}
	var repo struct {
		Spec struct{ URL string } `json:"spec"`
	}
	if err := yaml.Unmarshal(files["flux/gitrepository.yaml"], &repo); err != nil {
		t.Fatal(err)
	}
	if want := "http://" + lab.Hub.LANAddr.Addr().String() + ":8080/clusterset.git"; repo.Spec.URL != want {
		t.Errorf("GitRepository url %q, want the git server on the hub's LAN address %q", repo.Spec.URL, want)
	}
	var sync struct {
		Spec struct {
			Path string `json:"path"`
			Wait bool   `json:"wait"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(files["flux/sync.yaml"], &sync); err != nil {
		t.Fatal(err)
	}
	if sync.Spec.Path != "./clusterset" || !sync.Spec.Wait {
		t.Errorf("Kustomization path %q wait %v, want ./clusterset and a wait for the ClusterSet's health", sync.Spec.Path, sync.Spec.Wait)
	}
}

func TestRepoOfABadClusterSetIsRefused(t *testing.T) {
	lab, _ := exampleLab(t, "basic")
	_, err := repoFiles([]byte("apiVersion: strait.io/v1alpha1\nkind: ClusterSet\nspec: [\n"), &fluxSync{l: checkoutLab(t), t: lab})
	if err == nil || !strings.Contains(err.Error(), "yaml") {
		t.Errorf("a repo of a ClusterSet that is no YAML: error %v", err)
	}
}

// A sync the API server failed because it could not call the hub's webhook is waited
// through; one the webhook refused is the commit's and ends the wait.
func TestAnUncalledWebhookIsNotARefusal(t *testing.T) {
	const (
		uncalled = `ClusterSet/strait-system/demo dry-run failed (InternalError): Internal error occurred: failed calling webhook "clustersets.strait.io": failed to call webhook: Post "https://strait-hub-webhook.strait-system.svc:443/validate-strait-io-v1alpha1-clusterset?timeout=10s": context deadline exceeded`
		refused  = `ClusterSet/strait-system/demo dry-run failed: admission webhook "clustersets.strait.io" denied the request: spec.clusters[1].podCIDRs[0]: Invalid value: "10.8.0.0/16": overlaps c1's`
	)
	if !webhookUncalled(uncalled) {
		t.Errorf("webhookUncalled(%q) = false, want true: the API server could not call the webhook", uncalled)
	}
	if webhookUncalled(refused) {
		t.Errorf("webhookUncalled(%q) = true, want false: the webhook refused the commit", refused)
	}
}

// TestAppliedIsFluxsHealthCheckAhead: WaitApplied ends where Flux's next health check
// would say Ready: Flux applied the commit and checks its health, and the ClusterSet is
// Current as kstatus judges it; not for another commit's check, a ClusterSet a generation
// behind, not Ready, or Ready but still Reconciling or Stalled.
func TestAppliedIsFluxsHealthCheckAhead(t *testing.T) {
	want := "main@sha1:aaaa"
	// A Kustomization as kustomize-controller v1.9.6 writes it while it checks a
	// revision's health: Ready stays "Reconciliation in progress" from the start of the
	// reconcile, Reconciling and Healthy say what runs.
	kustomization := func(attempted, healthy, message string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
			"lastAttemptedRevision": attempted,
			"conditions": []any{
				map[string]any{"type": "Reconciling", "status": "True", "reason": "Progressing", "message": message},
				map[string]any{"type": "Ready", "status": "Unknown", "reason": "Progressing", "message": "Reconciliation in progress"},
				map[string]any{"type": "Healthy", "status": healthy, "reason": "Progressing", "message": message},
			},
		}}}
	}
	checking := "Running health checks for revision " + want + " with a timeout of 30s"
	if s := syncStatusOf(kustomization(want, "Unknown", checking)); !healthChecking(s, want) {
		t.Errorf("%s: not taken for the health check of %s", s, want)
	}
	for _, k := range []*unstructured.Unstructured{
		kustomization(want, "Unknown", "Running health checks for revision main@sha1:aaaab with a timeout of 30s"),
		kustomization("main@sha1:bbbb", "Unknown", checking),
		kustomization(want, "Unknown", "Building manifests for revision "+want+" with a timeout of 30s"),
		kustomization(want, "False", checking),
	} {
		if s := syncStatusOf(k); healthChecking(s, want) {
			t.Errorf("%s (Healthy %s: %s): taken for the health check of %s", s, s.Healthy, s.HealthMessage, want)
		}
	}
	obj := func(observed int64, conds ...metav1.Condition) straitv1.ClusterSet {
		cs := straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
		cs.Status.ObservedGeneration, cs.Status.Conditions = observed, conds
		return cs
	}
	cond := func(typ string, status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status}
	}
	for _, tc := range []struct {
		name string
		obj  straitv1.ClusterSet
		want bool
	}{
		{"Ready at its generation", obj(3, cond("Ready", "True")), true},
		{"a generation behind", obj(2, cond("Ready", "True")), false},
		{"not Ready", obj(3, cond("Ready", "False")), false},
		{"no Ready condition", obj(3), false},
		{"Ready but Reconciling", obj(3, cond("Ready", "True"), cond("Reconciling", "True")), false},
		{"Ready but Stalled", obj(3, cond("Stalled", "True"), cond("Ready", "True")), false},
		{"Ready, Stalled False", obj(3, cond("Ready", "True"), cond("Stalled", "False")), true},
	} {
		if got := kstatusCurrent(tc.obj); got != tc.want {
			t.Errorf("%s: kstatusCurrent = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestArgoCDRepoHoldsTheExampleApplication: with gitops: argocd the repo's wiring is
// argocd/: the example Application pointing at the lab's git server, main and
// clusterset/, with the example's sync policy, and the example's argocd-cm settings.
func TestArgoCDRepoHoldsTheExampleApplication(t *testing.T) {
	lab, data := exampleLab(t, "globalnet")
	files, err := repoFiles(data, &argoSync{l: checkoutLab(t), t: lab})
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(files))
	want := []string{"README.md", "argocd/application.yaml", "argocd/argocd-cm.yaml", "clusterset/clusterset.yaml", "clusterset/kustomization.yaml"}
	if !slices.Equal(names, want) {
		t.Errorf("repo files %v, want %v", names, want)
	}
	var app struct {
		Spec struct {
			Source struct {
				RepoURL, TargetRevision, Path string
			}
			SyncPolicy struct {
				Automated   map[string]any
				Retry       map[string]any
				SyncOptions []string
			}
		}
	}
	if err := yaml.Unmarshal(files["argocd/application.yaml"], &app); err != nil {
		t.Fatal(err)
	}
	src := app.Spec.Source
	if wantURL := "http://" + lab.Hub.LANAddr.Addr().String() + ":8080/clusterset.git"; src.RepoURL != wantURL || src.TargetRevision != "main" || src.Path != "clusterset" {
		t.Errorf("Application source %+v, want %s at main, path clusterset", src, wantURL)
	}
	if p := app.Spec.SyncPolicy; p.Automated == nil || p.Retry == nil || !slices.Contains(p.SyncOptions, "ServerSideApply=true") {
		t.Errorf("Application sync policy %+v, want the example's: automated, retry, ServerSideApply=true", p)
	}
	if !strings.Contains(string(files["README.md"]), "Argo CD syncs clusterset/") {
		t.Errorf("README.md names another syncer:\n%s", files["README.md"])
	}
}

// TestApplicationStatusReadsAsArgoCDWritesIt: the Application's status as Argo CD v3.6.1
// wrote it in the lab reads as the wait needs: synced and healthy; a commit refused at
// comparison (the webhook's dry run) as a failure of that commit; a sync failed and
// retrying as a failure of its revision, the live state still at the last good one.
func TestApplicationStatusReadsAsArgoCDWritesIt(t *testing.T) {
	const good, bad = "30731afc6d3c7c9ed170047309e58e87ead09fbc", "5e17dd4a6e0166b1446a093e9235335aefabea76"
	app := func(status map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "clusterset"}, "status": status}}
	}
	history := []any{map[string]any{"id": int64(0), "revision": good}}
	succeeded := map[string]any{"phase": "Succeeded", "message": "successfully synced (all tasks run)", "startedAt": "2026-11-29T06:30:32Z",
		"syncResult": map[string]any{"revision": good}}
	denied := `Failed to compare desired state to live state: failed to calculate diff: error calculating server side diff: serverSideDiff error: error running server side apply in dryrun mode for resource ClusterSet/overlap: admission webhook "clustersets.strait.io" denied the request: ClusterSet.strait.io "overlap" is invalid: spec.exports[0].clusters[0]: Not found: "g9"`
	for _, tc := range []struct {
		name                       string
		status                     map[string]any
		applied, attempted, ready  string
		operating, refusedUnsynced bool
	}{
		{"synced", map[string]any{"sync": map[string]any{"status": "Synced", "revision": good}, "health": map[string]any{"status": "Healthy"},
			"history": history, "operationState": succeeded}, good, good, "True", false, false},
		{"a commit that changes nothing", map[string]any{"sync": map[string]any{"status": "Synced", "revision": bad}, "health": map[string]any{"status": "Healthy"},
			"history": history, "operationState": succeeded}, bad, good, "True", false, false},
		{"refused at comparison", map[string]any{"sync": map[string]any{"status": "Unknown", "revision": bad}, "health": map[string]any{"status": "Healthy"},
			"history": history, "operationState": succeeded, "conditions": []any{map[string]any{"type": "ComparisonError", "message": denied}}},
			good, bad, "False", false, true},
		{"a failed sync retrying", map[string]any{"sync": map[string]any{"status": "OutOfSync", "revision": bad}, "health": map[string]any{"status": "Healthy"},
			"history": history, "operationState": map[string]any{"phase": "Running", "retryCount": int64(1), "startedAt": "2026-11-29T06:42:20Z",
				"message":   "one or more objects failed to apply, reason: " + denied + ". Retrying attempt #1 at 2026-11-29T06:42:31Z.",
				"operation": map[string]any{"sync": map[string]any{"revision": bad}}}}, good, bad, "False", true, false},
		{"a sync running", map[string]any{"sync": map[string]any{"status": "OutOfSync", "revision": bad}, "health": map[string]any{"status": "Healthy"},
			"history": history, "operationState": map[string]any{"phase": "Running", "startedAt": "2026-11-29T06:42:20Z",
				"operation": map[string]any{"sync": map[string]any{"revision": bad}}}}, good, bad, "Unknown", true, false},
	} {
		st := appStateOf(app(tc.status))
		if st.Applied != tc.applied || st.Attempted != tc.attempted || st.Ready != tc.ready || st.operating != tc.operating {
			t.Errorf("%s: %s, operating %v; want applied %.7s, attempted %.7s, Ready=%s, operating %v", tc.name, st.SyncStatus, st.operating, tc.applied, tc.attempted, tc.ready, tc.operating)
		}
		if got := st.Reason == "ComparisonError"; got != tc.refusedUnsynced {
			t.Errorf("%s: reason %q, want a refusal at comparison: %v", tc.name, st.Reason, tc.refusedUnsynced)
		}
	}
}

// TestPushEventIsGitHubs: the body the git server posts to argocd-server is a GitHub push
// event of the branch's new head, whose repository URL Argo CD matches to the
// Application's repoURL (the clone URL without .git).
func TestPushEventIsGitHubs(t *testing.T) {
	ev := pushEvent("http://10.250.0.2:8080/clusterset.git", "main", "abc123")
	repo, _ := ev["repository"].(map[string]any)
	if ev["ref"] != "refs/heads/main" || ev["after"] != "abc123" || repo["html_url"] != "http://10.250.0.2:8080/clusterset" || repo["default_branch"] != "main" {
		t.Errorf("push event %v", ev)
	}
}
