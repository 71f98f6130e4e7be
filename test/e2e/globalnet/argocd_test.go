package globalnet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/argocd"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// This lab's hub syncs the clusterset repo with Argo CD (gitops: argocd in its lab
// file): the application controller, repo-server, Redis and argocd-server built here from
// Argo CD's source, examples/clusterset/argocd's Application and health check, and the
// lab's git server posting a GitHub push event to argocd-server's /api/webhook on every
// push. Every other test of the suite commits through it too.

// appState is what `argocd app get clusterset` shows first: the sync status and the
// revision it is at, the health, and when the controller last compared.
type appState struct {
	Sync, Revision, Health, ReconciledAt string
	// Conditions are the Application's conditions, "type: message".
	Conditions []string
	// Syncs is how many syncs status.history records (Argo CD keeps the last ten), and
	// LastSync when the last operation (status.operationState) started: a sync, selfHeal's
	// included, changes one or the other.
	Syncs    int
	LastSync string
}

func (s appState) String() string {
	return fmt.Sprintf("%s at %.12s, %s (compared %s) %v", s.Sync, s.Revision, s.Health, s.ReconciledAt, s.Conditions)
}

// application reads the lab's Application from the hub.
func application(t *testing.T) appState {
	t.Helper()
	s, err := readApplication(env.Client(t, topology.HubName))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readApplication(c client.Client) (appState, error) {
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"})
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: argocd.Namespace, Name: argocd.AppName}, app); err != nil {
		return appState{}, err
	}
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(app.Object, append([]string{"status"}, path...)...)
		return v
	}
	s := appState{Sync: str("sync", "status"), Revision: str("sync", "revision"), Health: str("health", "status"), ReconciledAt: str("reconciledAt")}
	history, _, _ := unstructured.NestedSlice(app.Object, "status", "history")
	s.Syncs, s.LastSync = len(history), str("operationState", "startedAt")
	conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		s.Conditions = append(s.Conditions, fmt.Sprintf("%v: %v", m["type"], m["message"]))
	}
	return s, nil
}

// TestArgoCDStaysSyncedThroughResyncs: the Application is Synced and Healthy and stays so
// over several resyncs (every lab.ArgoCDResync), while the live ClusterSet carries what
// git does not say: the CRD's defaults (exportPolicy, each export's clusterSetIP,
// globalnet's clusterEgressIPs, interval), strait hub's status, and an annotation another
// field manager sets meanwhile. Argo CD's diff is the API server's dry-run apply (the
// example's ServerSideApply=true turns server-side diff on), which defaults as the real
// apply does and compares only the fields the Application manages.
func TestArgoCDStaysSyncedThroughResyncs(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	live := env.ClusterSet(t)
	if live.Spec.ExportPolicy == "" || live.Spec.Globalnet.ClusterEgressIPs == 0 || strings.Contains(string(env.RepoClusterSet(t)), "exportPolicy") {
		t.Fatalf("the live ClusterSet lacks the CRD's defaults the test is about (exportPolicy %q, clusterEgressIPs %d), or git sets them",
			live.Spec.ExportPolicy, live.Spec.Globalnet.ClusterEgressIPs)
	}
	// Another manager's field, as a person's kubectl annotate or a policy engine adds.
	touched := live.DeepCopy()
	patch := client.MergeFrom(live)
	metav1.SetMetaDataAnnotation(&touched.ObjectMeta, "e2e.strait.io/touched", time.Now().Format(time.RFC3339))
	if err := env.Client(t, topology.HubName).Patch(ctx, touched, patch, client.FieldOwner("e2e-annotator")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		undo := touched.DeepCopy()
		delete(undo.Annotations, "e2e.strait.io/touched")
		_ = env.Client(t, topology.HubName).Patch(context.Background(), undo, client.MergeFrom(touched))
	})
	compared := map[string]bool{}
	// No sync may run meanwhile: with selfHeal, an OutOfSync that a sync heals between
	// two polls would show only there.
	first := application(t)
	deadline := time.Now().Add(3*lab.ArgoCDResync + lab.ArgoCDResync/2)
	for time.Now().Before(deadline) {
		s := application(t)
		if s.Sync != "Synced" || s.Health != "Healthy" || len(s.Conditions) > 0 {
			t.Fatalf("application/%s: %s, want Synced and Healthy with no condition", argocd.AppName, s)
		}
		if s.Syncs != first.Syncs || s.LastSync != first.LastSync {
			t.Fatalf("application/%s synced over the resyncs (history %d → %d, last operation started %q → %q): a comparison found it OutOfSync",
				argocd.AppName, first.Syncs, s.Syncs, first.LastSync, s.LastSync)
		}
		compared[s.ReconciledAt] = true
		time.Sleep(200 * time.Millisecond)
	}
	if len(compared) < 3 {
		t.Fatalf("application/%s was compared %d times in %s (reconciledAt %v), want 3 or more: the resync did not run",
			argocd.AppName, len(compared), 3*lab.ArgoCDResync+lab.ArgoCDResync/2, compared)
	}
	t.Logf("application/%s Synced and Healthy through %d comparisons", argocd.AppName, len(compared))
}

// TestArgoCDJudgesTheClusterSetsHealth: the Application's health follows the
// ClusterSet's conditions through a commit: Progressing while strait hub reconciles the
// new generation (the example's health check: Reconciling=True, or the generation not yet
// observed), then Healthy once every member holds it, and nothing else on the way.
//
// strait hub reconciles a one-field change in tens of milliseconds, often before Argo CD
// compares after its sync (Argo CD saw Progressing in 5 of 6 runs without help), so the
// test slows one member down as a member far away would be: g2's API server is paused
// before the push and the hub's reconcile waits on it, Reconciling. It is resumed as soon
// as Argo CD says Progressing at the commit, within the hub's member probe timeout (3 s;
// later, the hub would call g2 unreachable and the health Degraded, and the test fails).
func TestArgoCDJudgesTheClusterSetsHealth(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	hub := env.Client(t, topology.HubName)
	resume := env.PauseAPIServer(t, "g2")
	paused := time.Now()
	commit := env.PushClusterSet(t, labtest.ChangeClusterSet(t, env.RepoClusterSet(t), func(cs *straitv1.ClusterSet) {
		cs.Spec.Interval = &metav1.Duration{Duration: 9 * time.Minute}
	}), "e2e: a longer interval")

	// Argo CD's verdicts at the commit's revision, each change of them, "sync/health":
	// OutOfSync/Healthy first (it compared the commit with the ClusterSet of before),
	// then, once it synced, Synced/Progressing and Synced/Healthy.
	var seen []string
	record := func(s appState) {
		if v := s.Sync + "/" + s.Health; s.Revision == commit && (len(seen) == 0 || seen[len(seen)-1] != v) {
			seen = append(seen, v)
			t.Logf("%6s after the push: application/%s %s", time.Since(paused).Round(time.Millisecond), argocd.AppName, s)
		}
	}
	// poll reads the Application every 20 ms, recording each read, until done says so
	// or the deadline has passed; it returns the last read.
	deadline := time.Now().Add(converge)
	poll := func(done func(appState) bool) appState {
		for {
			s, err := readApplication(hub)
			if err != nil {
				t.Fatal(err)
			}
			if record(s); done(s) || time.Now().After(deadline) {
				return s
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	synced := func(s appState) bool { return s.Revision == commit && s.Sync == "Synced" }
	if s := poll(synced); synced(s) && s.Health != "Progressing" {
		t.Fatalf("application/%s went %v at the commit while g2's API server was paused, want Synced/Progressing", argocd.AppName, seen)
	}
	resume()
	progressing := time.Since(paused)
	poll(func(s appState) bool { return synced(s) && s.Health != "Progressing" })
	if _, err := env.Lab.WaitSynced(context.Background(), commit, converge); err != nil {
		t.Fatal(err)
	}
	record(application(t))
	t.Logf("application/%s through the commit: %v (Progressing %s after the push)", argocd.AppName, seen, progressing.Round(time.Millisecond))
	var afterSync []string
	for _, v := range seen {
		if h, ok := strings.CutPrefix(v, "Synced/"); ok {
			afterSync = append(afterSync, h)
		} else if v != "OutOfSync/Healthy" {
			t.Errorf("application/%s was %s at the commit before its sync, want OutOfSync/Healthy", argocd.AppName, v)
		}
	}
	if !slices.Equal(afterSync, []string{"Progressing", "Healthy"}) {
		t.Errorf("application/%s health after its sync went %v, want [Progressing Healthy]", argocd.AppName, afterSync)
	}
}

// TestArgoCDRefusesABadCommit: a commit the webhook refuses (an export naming no member)
// shows on the Application with the webhook's message naming the field, no sync of it is
// made, the members keep the last good state, and the next good commit syncs.
func TestArgoCDRefusesABadCommit(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	good := env.RepoClusterSet(t)
	before := env.ClusterSet(t)
	app := application(t)
	start := time.Now()
	err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.Exports[0].Clusters = []string{"g9"}
	})
	var refused *lab.SyncError
	if !errors.As(err, &refused) {
		t.Fatalf("a commit exporting from a cluster that is no member: %v, want Argo CD to report it refused", err)
	}
	t.Logf("bad commit → application/%s %s in %s: %s", argocd.AppName, refused.Status.Reason, time.Since(start).Round(time.Millisecond), refused.Status.Message)
	// Refused where the design says: Argo CD's diff is the API server's dry-run apply,
	// which the webhook judges, so the comparison fails and no sync of it is tried (a
	// refusal at the sync's apply would say the diff ran client-side).
	if refused.Status.Reason != "ComparisonError" {
		t.Errorf("the bad commit was refused with %q, want ComparisonError (at the comparison, before any sync)", refused.Status.Reason)
	}
	for _, want := range []string{"spec.exports[0].clusters[0]", `"g9"`, "denied the request"} {
		if !strings.Contains(refused.Status.Message, want) {
			t.Errorf("the Application's message %q does not name %s", refused.Status.Message, want)
		}
	}
	s := application(t)
	t.Logf("application/%s after the bad commit: %s", argocd.AppName, s)
	if s.Sync == "Synced" {
		t.Errorf("application/%s says Synced at a commit the webhook refused: %s", argocd.AppName, s)
	}
	if s.Syncs != app.Syncs || s.LastSync != app.LastSync {
		t.Errorf("application/%s ran a sync of a commit refused at its comparison (history %d → %d, last operation started %q → %q)",
			argocd.AppName, app.Syncs, s.Syncs, app.LastSync, s.LastSync)
	}
	if after := env.ClusterSet(t); after.Generation != before.Generation {
		t.Errorf("ClusterSet generation %d → %d after a refused commit", before.Generation, after.Generation)
	}
	// g1 still imports g2's whereami-cs by its name.
	ns, _ := env.ClientNamespace(t, "g1")
	lookupIn(t, ns, "g2.whereami-cs.sample.svc.clusterset.local", globalCIDR(t, "g2"))

	start = time.Now()
	revert, err := env.CommitClusterSet(t, good, "revert the export from g9")
	if err != nil {
		t.Fatalf("reverting the bad commit: %v", err)
	}
	t.Logf("revert %.12s → synced in %s", revert, time.Since(start).Round(time.Millisecond))
	if s := application(t); s.Revision != revert || s.Sync != "Synced" {
		t.Errorf("application/%s after the revert: %s, want Synced at %.12s", argocd.AppName, s, revert)
	}
	if after := env.ClusterSet(t); after.Generation != before.Generation {
		t.Errorf("ClusterSet generation %d → %d after the revert", before.Generation, after.Generation)
	}
}

// TestStraitDiffAgreesWithArgoCD: before a commit lands, `strait diff` and Argo CD's own
// diff of it (`argocd app diff --core --revision`, the commit pushed to a branch of its
// own, as a pull request's is) show the same change in the hub: the same lines go and
// come, and both exit 1 (differences found).
func TestStraitDiffAgreesWithArgoCD(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	url, err := env.Lab.GitURL()
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "clusterset")
	labtest.Git(t, "", "clone", "--quiet", url, clone)
	branch := "preview-" + strings.ToLower(t.Name())
	labtest.Git(t, clone, "checkout", "--quiet", "-b", branch)
	file := filepath.Join(clone, filepath.FromSlash(lab.RepoClusterSet))
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Edited as a person edits it, one line added: not re-marshalled, which would also
	// spell out the empty objects (cable: {}, dns: {}) whose defaults strait diff shows
	// as the API server fills them in and Argo CD's diff leaves out.
	changed := strings.Replace(string(data), "\n    clusterSize: ", "\n    clusterEgressIPs: 4\n    clusterSize: ", 1)
	if changed == string(data) {
		t.Fatalf("%s has no globalnet.clusterSize line to add clusterEgressIPs beside:\n%s", lab.RepoClusterSet, data)
	}
	if err := os.WriteFile(file, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	labtest.Git(t, clone, "commit", "--quiet", "-am", "fewer egress IPs per cluster")
	labtest.Git(t, clone, "push", "--quiet", "origin", branch)
	t.Cleanup(func() { labtest.Git(t, clone, "push", "--quiet", "--delete", "origin", branch) })
	commit := labtest.Git(t, clone, "rev-parse", "HEAD")

	hub := env.Lab.State().KubeconfigPath(topology.HubName)
	out, errOut, code := labtest.Run(t, 2*time.Minute, env.Strait, "diff", "-f", file, "--kubeconfig", hub)
	if code != 1 {
		t.Fatalf("strait diff: exit %d, want 1 (differences)\n%s%s", code, out, errOut)
	}
	straitGone, straitCome := hubChanges(out)

	argo, err := argocd.Locate(ctx, filepath.Join(env.Root, "test", "argocdbin"))
	if err != nil {
		t.Fatal(err)
	}
	// argocd --core reads Argo CD's namespace from the kubeconfig's context, and keeps
	// its own configuration under HOME.
	home := t.TempDir()
	kubeconfig := filepath.Join(home, "kubeconfig")
	hubConfig, err := os.ReadFile(hub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, hubConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if o, err := exec.Command(filepath.Join(env.K8sBin, "kubectl"), "--kubeconfig", kubeconfig, "config", "set-context", "--current", "--namespace", argocd.Namespace).CombinedOutput(); err != nil {
		t.Fatalf("kubectl config set-context: %v\n%s", err, o)
	}
	cmd := exec.Command(filepath.Join(env.Root, "bin", "argocd", argo.Version, "argocd"), "app", "diff", argocd.AppName, "--core", "--revision", commit)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+home)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("argocd app diff --revision %.12s: %v, want exit 1 (differences)\n%s%s", commit, err, stdout.String(), stderr.String())
	}
	argoGone, argoCome := argoChanges(stdout.String())
	t.Logf("strait diff (hub):\n%s\nargocd app diff:\n%s", out, stdout.String())
	if !slices.Equal(straitGone, argoGone) || !slices.Equal(straitCome, argoCome) || len(argoCome) == 0 {
		t.Errorf("the diffs disagree on the hub: strait diff - %q + %q, argocd app diff - %q + %q", straitGone, straitCome, argoGone, argoCome)
	}
}

// hubChanges are the lines strait diff's hub objects lose and gain, trimmed and sorted.
func hubChanges(diff string) (gone, come []string) {
	hub := false
	for line := range strings.SplitSeq(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "--- "):
			hub = strings.HasPrefix(line, "--- "+topology.HubName+"/")
		case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "@@"), !hub:
		case strings.HasPrefix(line, "-"):
			gone = append(gone, strings.TrimSpace(line[1:]))
		case strings.HasPrefix(line, "+"):
			come = append(come, strings.TrimSpace(line[1:]))
		}
	}
	slices.Sort(gone)
	slices.Sort(come)
	return gone, come
}

// argoChanges are the lines argocd app diff (diff's normal format) takes out and puts
// in, trimmed and sorted.
func argoChanges(diff string) (gone, come []string) {
	for line := range strings.SplitSeq(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "< "):
			gone = append(gone, strings.TrimSpace(line[2:]))
		case strings.HasPrefix(line, "> "):
			come = append(come, strings.TrimSpace(line[2:]))
		}
	}
	slices.Sort(gone)
	slices.Sort(come)
	return gone, come
}

// refreshWatch watches the lab's Application from its start until stop, and keeps when
// it first carried Argo CD's refresh annotation: what argocd-server's /api/webhook
// handler sets on a push event for its repo (the controller takes it off once it has
// compared); Argo CD's own resync never sets it.
type refreshWatch struct {
	mu      sync.Mutex
	first   time.Time
	stopped chan struct{}
	cancel  context.CancelFunc
}

func watchRefresh(t *testing.T) *refreshWatch {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Lab.State().KubeconfigPath(topology.HubName))
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := dc.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}).
		Namespace(argocd.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + argocd.AppName})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &refreshWatch{stopped: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(r.stopped)
		defer w.Stop()
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			if _, refresh := u.GetAnnotations()["argocd.argoproj.io/refresh"]; refresh {
				r.mu.Lock()
				if r.first.IsZero() {
					r.first = time.Now()
				}
				r.mu.Unlock()
			}
		}
	}()
	t.Cleanup(r.stop)
	return r
}

func (r *refreshWatch) stop() { r.cancel(); <-r.stopped }

// since is how long after from the webhook's refresh came first, and whether it did.
func (r *refreshWatch) since(from time.Time) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.first.IsZero() || r.first.Before(from) {
		return 0, false
	}
	return r.first.Sub(from), true
}
