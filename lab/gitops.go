package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/flux"
	"github.com/straitnet/strait/lab/gitserver"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/plan"
)

// The lab's clusterset repo, laid out as a platform team keeps one: the ClusterSet and
// its kustomization in clusterset/, which Flux applies to the hub, and the Flux wiring in
// flux/, which is applied once by hand (as `flux bootstrap` does).
const (
	RepoName = "clusterset"
	// RepoClusterSet is the ClusterSet's path in the repo.
	RepoClusterSet    = repoClusterSetDir + "/clusterset.yaml"
	repoClusterSetDir = "clusterset"
	repoFluxDir       = "flux"
)

// GitRoot holds the lab's bare repositories.
func (s State) GitRoot() string { return s.path("git") }

// Repo is the lab's clusterset repository.
func (l *Lab) Repo() gitserver.Repo {
	return gitserver.Repo{Dir: gitserver.Path(l.state.GitRoot(), RepoName)}
}

// gitHostPort is the git server's port on the host's loopback, just below the forwarders.
func (r *Record) gitHostPort() int { return r.PortBase - 1 }

// GitURL is the clusterset repo's clone URL from this machine.
func (l *Lab) GitURL() (string, error) {
	r, _, err := l.Load()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("http://127.0.0.1:%d/%s.git", r.gitHostPort(), RepoName), nil
}

// hubGitURL is the repo's clone URL on the hub's LAN address, where source-controller
// reaches it.
func hubGitURL(t *topology.Lab) string {
	return fmt.Sprintf("http://%s:%d/%s.git", t.Hub.LANAddr.Addr(), topology.GitPort, RepoName)
}

// labSync is the lab's Flux wiring: examples/clusterset/flux with the lab's URL and
// path, and durations that suit tests. A push to the lab's git server asks for a sync at
// once (as a forge's webhook to Flux's receiver would); the GitRepository's interval
// catches commits made without a push. The health-check timeout is short so that a
// ClusterSet that does not become Ready shows as a failed sync within a test: 30 s, the
// least kustomize-controller takes (a shorter spec.timeout is raised to it), and Flux
// tries a failed sync again 10 s after.
func labSync(t *topology.Lab) flux.Sync {
	return flux.Sync{URL: hubGitURL(t), Branch: gitserver.Branch, Path: "./" + repoClusterSetDir,
		TargetNamespace: straitv1.SystemNamespace, GitInterval: time.Minute, Interval: 10 * time.Minute,
		RetryInterval: 10 * time.Second, Timeout: 30 * time.Second, DecryptionSecret: sopsSecret}
}

// repoFiles are the first commit of the lab's repo.
func repoFiles(clusterSet []byte, s flux.Sync) (map[string][]byte, error) {
	if _, err := plan.Parse(clusterSet); err != nil {
		return nil, err
	}
	sync, err := s.SyncFiles()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		path.Join(repoClusterSetDir, "clusterset.yaml"): clusterSet,
		path.Join(repoClusterSetDir, "kustomization.yaml"): []byte(
			"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - clusterset.yaml\n"),
		"README.md": []byte(`# clusterset

The lab's clusterset repo. Flux syncs clusterset/ to the hub (flux/sync.yaml); a push
is synced at once. Preview a change before you push it:

    strait diff -f clusterset/clusterset.yaml
`),
	}
	for name, data := range sync {
		files[path.Join(repoFluxDir, name)] = data
	}
	return files, nil
}

// ensureRepo creates the lab's repo from the ClusterSet unless it exists, and returns
// its head.
func (l *Lab) ensureRepo(ctx context.Context, t *topology.Lab, rec *Record) (string, error) {
	repo := l.Repo()
	if _, err := os.Stat(repo.Dir); err == nil {
		return repo.Head(ctx)
	}
	committed, err := rec.JoinedClusterSet()
	if err != nil {
		return "", err
	}
	files, err := repoFiles(committed, labSync(t))
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "strait-lab-repo-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(l.state.GitRoot(), 0o755); err != nil {
		return "", err
	}
	_, head, err := gitserver.Create(ctx, l.state.GitRoot(), RepoName, dir, "clusterset: "+filepath.Base(filepath.Dir(rec.Spec.ClusterSet)), gitserver.LabAuthor())
	return head, err
}

// fluxImages are the images of Flux's install manifest in the image directory.
func (o Options) fluxImages() ([]string, error) {
	data, err := os.ReadFile(filepath.Join(o.ImageDir, flux.InstallFile))
	if err != nil {
		return nil, fmt.Errorf("flux: %w (make flux-images)", err)
	}
	var refs []string
	for _, doc := range plan.SplitYAML(data) {
		var d struct {
			Kind string `json:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Image string `json:"image"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(doc, &d); err != nil {
			return nil, fmt.Errorf("flux install manifest: %w", err)
		}
		if d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			refs = append(refs, c.Image)
		}
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("flux install manifest %s: no Deployment", filepath.Join(o.ImageDir, flux.InstallFile))
	}
	return refs, nil
}

// applyFluxControllers installs Flux into the hub from its install manifest (kubectl
// apply --server-side -f, as `flux install` applies its own): CRDs, RBAC and the
// controllers, which wait for nothing of Strait's, so the lab starts them beside strait
// hub; syncFlux then starts the sync.
func (l *Lab) applyFluxControllers(ctx context.Context) error {
	_, err := l.Kubectl(ctx, topology.HubName, "apply", "--server-side", "--force-conflicts",
		"-f", filepath.Join(l.opts.ImageDir, flux.InstallFile))
	return err
}

// syncFlux waits for Flux's controllers (applied at start) and applies the repo's flux/
// directory, which points them at the lab's repo: from then on the ClusterSet comes from
// git.
func (l *Lab) syncFlux(ctx context.Context, t *topology.Lab, client kubernetes.Interface, start time.Time, timeout time.Duration) error {
	if err := l.waitWorkloads(ctx, topology.HubName, flux.Namespace, client, timeout); err != nil {
		return err
	}
	head, err := l.Repo().Head(ctx)
	if err != nil {
		return err
	}
	dir := l.FluxSyncDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"kustomization.yaml", "gitrepository.yaml", "sync.yaml"} {
		data, err := l.Repo().File(ctx, head, path.Join(repoFluxDir, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	if err := l.ensureSOPSSecret(ctx, client); err != nil {
		return err
	}
	if _, err := l.Kubectl(ctx, topology.HubName, "apply", "--server-side", "-k", dir); err != nil {
		return err
	}
	l.progress("hub: flux %s in %.1fs, syncing %s (kubectl apply -k %s/)", flux.Namespace, time.Since(start).Seconds(), hubGitURL(t), repoFluxDir)
	return nil
}

// FluxSyncDir is the repo's flux/ directory as the lab applied it to the hub (kubectl
// apply -k): deleting it (kubectl delete -k) stops the sync and, with prune on, makes
// Flux delete the ClusterSet.
func (l *Lab) FluxSyncDir() string {
	return filepath.Join(l.state.ClusterDir(topology.HubName), "flux-sync")
}

// SyncStatus is the lab's Kustomization as `flux get kustomizations` shows it.
type SyncStatus struct {
	// Applied and Attempted are revisions (main@sha1:<commit>).
	Applied, Attempted string
	// Ready is the Ready condition's status, with its reason and message.
	Ready, Reason, Message string
	// Healthy and HealthMessage are the Healthy condition's status and message: while
	// Flux checks a revision's health, Unknown and "Running health checks for revision
	// <revision> ..." (Ready then says only "Reconciliation in progress").
	Healthy, HealthMessage string
	// Handled is the last reconcile request (reconcile.fluxcd.io/requestedAt) Flux
	// acted on.
	Handled string
}

func (s SyncStatus) String() string {
	return fmt.Sprintf("applied %s, attempted %s, Ready=%s %s: %s", s.Applied, s.Attempted, s.Ready, s.Reason, s.Message)
}

// SyncError is a commit Flux did not apply, or applied without the ClusterSet becoming
// Ready: the Kustomization's Ready condition says why (the webhook's refusal, a failed
// health check).
type SyncError struct {
	Revision string
	Status   SyncStatus
}

func (e *SyncError) Error() string {
	return fmt.Sprintf("flux did not sync %s: Ready=%s %s: %s", e.Revision, e.Status.Ready, e.Status.Reason, e.Status.Message)
}

// gitRepositories and kustomizations are the resources of the lab's GitRepository and
// Kustomization.
func gitRepositories() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
}

func kustomizations() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
}

// fluxClient is a client of the hub for Flux's objects.
func (l *Lab) fluxClient() (dynamic.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", l.state.KubeconfigPath(topology.HubName))
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}

// Sync reads the lab's Kustomization.
func (l *Lab) Sync(ctx context.Context) (SyncStatus, error) {
	c, err := l.fluxClient()
	if err != nil {
		return SyncStatus{}, err
	}
	return readSync(ctx, c)
}

func readSync(ctx context.Context, c dynamic.Interface) (SyncStatus, error) {
	k, err := c.Resource(kustomizations()).Namespace(flux.Namespace).Get(ctx, flux.SyncName, metav1.GetOptions{})
	if err != nil {
		return SyncStatus{}, err
	}
	return syncStatusOf(k), nil
}

// syncStatusOf reads a Kustomization's status.
func syncStatusOf(k *unstructured.Unstructured) SyncStatus {
	var s SyncStatus
	s.Applied, _, _ = unstructured.NestedString(k.Object, "status", "lastAppliedRevision")
	s.Attempted, _, _ = unstructured.NestedString(k.Object, "status", "lastAttemptedRevision")
	s.Handled, _, _ = unstructured.NestedString(k.Object, "status", "lastHandledReconcileAt")
	conds, _, _ := unstructured.NestedSlice(k.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		switch m["type"] {
		case "Ready":
			s.Ready, _ = m["status"].(string)
			s.Reason, _ = m["reason"].(string)
			s.Message, _ = m["message"].(string)
		case "Healthy":
			s.Healthy, _ = m["status"].(string)
			s.HealthMessage, _ = m["message"].(string)
		}
	}
	return s
}

// Push commits changes to the repo (paths as gitserver.Repo.Change takes them) and asks
// Flux to sync, as a push to the lab's git server does; it returns the commit, to wait
// for with WaitSynced.
func (l *Lab) Push(ctx context.Context, changes map[string][]byte, message string, by gitserver.Author) (string, error) {
	commit, err := l.Repo().Change(ctx, changes, message, by)
	if err != nil {
		return "", err
	}
	return commit, l.RequestSync(ctx)
}

// RequestSync asks Flux to fetch the repo now, as `flux reconcile source git clusterset`
// does; the Kustomization follows a new revision by itself.
func (l *Lab) RequestSync(ctx context.Context) error {
	c, err := l.fluxClient()
	if err != nil {
		return err
	}
	_, err = requestReconcile(ctx, c, gitRepositories())
	return err
}

// requestReconcile asks a Flux controller to reconcile the lab's object of a resource
// now; Flux copies the token it returns to status.lastHandledReconcileAt when it has.
func requestReconcile(ctx context.Context, c dynamic.Interface, r schema.GroupVersionResource) (string, error) {
	token := time.Now().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
	_, err := c.Resource(r).Namespace(flux.Namespace).Patch(ctx, flux.SyncName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return token, err
}

// WaitSynced waits until Flux applied commit and the ClusterSet is Ready (the
// Kustomization waits for it), or until Flux gave up on it: then the error is a
// *SyncError with the Kustomization's reason and message. A failure Flux recorded on
// commit before the wait began (lab up again, after the webhook was down) is not the
// answer: WaitSynced asks for a new attempt, as `flux reconcile kustomization` does, and
// judges that one.
func (l *Lab) WaitSynced(ctx context.Context, commit string, timeout time.Duration) (SyncStatus, error) {
	return l.waitSync(ctx, commit, timeout, false)
}

// WaitApplied is WaitSynced that ends as soon as Flux has applied commit and every
// ClusterSet in the hub is Ready at the generation it applied (as kstatus, Flux's health
// check, judges it: observedGeneration current, Ready True, neither Reconciling nor
// Stalled), without waiting for Flux to see that itself: its health check looks every
// 5 s, the first time right after the apply, so it says Ready 5 s after the commit at the
// earliest. A test's commit waits so (labtest's CommitClusterSet); what a person sees
// after lab up, Flux's own Ready, is WaitSynced's. A commit whose ClusterSet does not
// become Ready ends as in WaitSynced, with Flux's verdict.
func (l *Lab) WaitApplied(ctx context.Context, commit string, timeout time.Duration) (SyncStatus, error) {
	return l.waitSync(ctx, commit, timeout, true)
}

func (l *Lab) waitSync(ctx context.Context, commit string, timeout time.Duration, applied bool) (SyncStatus, error) {
	c, err := l.fluxClient()
	if err != nil {
		return SyncStatus{}, err
	}
	want := flux.Revision(gitserver.Branch, commit)
	deadline := time.Now().Add(timeout)
	read := false    // whether a status was read: a failure in the first may be stale
	var retry string // the reconcile request made for a stale failure
	for {
		s, err := readSync(ctx, c)
		failed := err == nil && s.Attempted == want && s.Ready == "False"
		switch {
		case err != nil:
		case s.Applied == want && s.Ready == "True":
			return s, nil
		case applied && healthChecking(s, want) && clusterSetsReady(ctx, c):
			return s, nil
		case failed && !read:
			if retry, err = requestReconcile(ctx, c, kustomizations()); err != nil {
				return s, err
			}
		case failed && webhookUncalled(s.Message) && (retry == "" || s.Handled == retry):
			// Not a refusal: the API server could not reach the hub's webhook (its pod
			// just started after an install, its endpoint not yet routed). Flux tries
			// again after its retryInterval; ask it now, until the deadline.
			if retry, err = requestReconcile(ctx, c, kustomizations()); err != nil {
				return s, err
			}
		case failed && (retry == "" || s.Handled == retry):
			return s, &SyncError{Revision: want, Status: s}
		}
		read = read || err == nil
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New(s.String())
			}
			return s, fmt.Errorf("flux did not sync %s within %s: %w (kubectl -n %s get kustomizations,gitrepositories)", want, timeout, err, flux.Namespace)
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// healthChecking says Flux applied want and is checking the health of what it applied
// (kustomize-controller's message while it waits).
func healthChecking(s SyncStatus, want string) bool {
	return s.Attempted == want && s.Ready == "Unknown" && s.Healthy == "Unknown" &&
		strings.HasPrefix(s.HealthMessage, "Running health checks for revision "+want+" ")
}

// clusterSetsReady says every ClusterSet in the hub is Ready at its generation, as
// kstatus judges a custom resource (kstatusCurrent).
func clusterSetsReady(ctx context.Context, c dynamic.Interface) bool {
	list, err := c.Resource(straitv1.GroupVersion.WithResource("clustersets")).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) == 0 {
		return false
	}
	for _, u := range list.Items {
		var cs straitv1.ClusterSet
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &cs) != nil || !kstatusCurrent(cs) {
			return false
		}
	}
	return true
}

// kstatusCurrent is kstatus' verdict Current for a ClusterSet: observedGeneration
// current, Ready True, and no Reconciling or Stalled condition True.
func kstatusCurrent(cs straitv1.ClusterSet) bool {
	c := cs.Status.Conditions
	return cs.Status.ObservedGeneration == cs.Generation && apimeta.IsStatusConditionTrue(c, "Ready") &&
		!apimeta.IsStatusConditionTrue(c, "Reconciling") && !apimeta.IsStatusConditionTrue(c, "Stalled")
}

// webhookUncalled says a failed sync's message is the API server failing to call an
// admission webhook (connection refused, a timeout), which passes, and not a webhook's
// refusal ("admission webhook ... denied the request"), which is the commit's.
func webhookUncalled(message string) bool {
	return strings.Contains(message, "failed calling webhook")
}

// gitStatus is the repo's head and Flux's view of it for lab status.
func (l *Lab) gitStatus(ctx context.Context) string {
	var b strings.Builder
	url, _ := l.GitURL()
	head, err := l.Repo().Head(ctx)
	if err != nil {
		fmt.Fprintf(&b, "  repo %s: %v\n", url, err)
	} else {
		fmt.Fprintf(&b, "  repo %s  head %s\n", url, flux.Revision(gitserver.Branch, head))
	}
	s, err := l.Sync(ctx)
	if err != nil {
		fmt.Fprintf(&b, "  kustomization/%s: %v\n", flux.SyncName, err)
	} else {
		fmt.Fprintf(&b, "  kustomization/%s  applied %s  Ready=%s  %s\n", flux.SyncName, s.Applied, s.Ready, s.Message)
	}
	return b.String()
}
