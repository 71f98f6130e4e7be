package lab

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/gitserver"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/plan"
)

// The lab's clusterset repo, laid out as a platform team keeps one: the ClusterSet and
// its kustomization in clusterset/, which the GitOps controller applies to the hub, and
// that controller's wiring in a directory of its own (flux/ or argocd/), which is applied
// once by hand (as `flux bootstrap` or `kubectl apply -f application.yaml` does).
const (
	RepoName = "clusterset"
	// RepoClusterSet is the ClusterSet's path in the repo.
	RepoClusterSet    = repoClusterSetDir + "/clusterset.yaml"
	repoClusterSetDir = "clusterset"
)

// gitOps is the controller that syncs the lab's repo to the hub, as the lab file chooses
// (topology.Spec.GitOps): Flux's source- and kustomize-controller (fluxSync) or Argo CD
// (argoSync). The lab drives either through this: installed beside Strait, pointed at the
// repo once strait hub's webhook answers, asked to sync on a push, read and waited for.
type gitOps interface {
	// wiring is the repo's directory of the controller's wiring and the files in it.
	wiring() (dir string, files map[string][]byte, err error)
	// images are the images of its workloads, which the hub's node imports.
	images() ([]string, error)
	// install applies its CRDs, RBAC and workloads to the hub.
	install(ctx context.Context) error
	// start points it at the repo (waiting for what that needs of its workloads).
	start(ctx context.Context, client kubernetes.Interface, since time.Time, timeout time.Duration) error
	// settle waits for the rest of its workloads, which the first sync did not need.
	settle(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error
	// requestSync asks it to fetch the repo now, as a forge's push webhook does.
	requestSync(ctx context.Context) error
	// read is its account of the repo's sync.
	read(ctx context.Context) (SyncStatus, error)
	// waitSync is Lab.WaitSynced (applied false) and Lab.WaitApplied (applied true).
	waitSync(ctx context.Context, commit string, timeout time.Duration, applied bool) (SyncStatus, error)
	// revision is how it names a commit of the repo's branch.
	revision(commit string) string
}

// gitOpsOf is the GitOps controller of a lab of spec.
func (l *Lab) gitOpsOf(spec topology.Spec, t *topology.Lab) gitOps {
	if spec.SyncsWith() == topology.GitOpsArgoCD {
		return &argoSync{l: l, t: t}
	}
	return &fluxSync{l: l, t: t}
}

// gitOps is the GitOps controller of the lab that is up.
func (l *Lab) gitOps() (gitOps, error) {
	r, t, err := l.Load()
	if err != nil {
		return nil, err
	}
	return l.gitOpsOf(r.Spec, t), nil
}

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

// hubGitURL is the repo's clone URL on the hub's LAN address, where the GitOps
// controller's pods reach it.
func hubGitURL(t *topology.Lab) string {
	return fmt.Sprintf("http://%s:%d/%s.git", t.Hub.LANAddr.Addr(), topology.GitPort, RepoName)
}

// repoFiles are the first commit of the lab's repo.
func repoFiles(clusterSet []byte, g gitOps) (map[string][]byte, error) {
	if _, err := plan.Parse(clusterSet); err != nil {
		return nil, err
	}
	dir, wiring, err := g.wiring()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		path.Join(repoClusterSetDir, "clusterset.yaml"): clusterSet,
		path.Join(repoClusterSetDir, "kustomization.yaml"): []byte(
			"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - clusterset.yaml\n"),
		"README.md": []byte(fmt.Sprintf(`# clusterset

The lab's clusterset repo. %s syncs clusterset/ to the hub (%s/); a push
is synced at once. Preview a change before you push it:

    strait diff -f clusterset/clusterset.yaml
`, syncerName(dir), dir)),
	}
	for name, data := range wiring {
		files[path.Join(dir, name)] = data
	}
	return files, nil
}

// syncerName is the product that a wiring directory (flux, argocd) wires.
func syncerName(dir string) string {
	if dir == topology.GitOpsArgoCD {
		return "Argo CD"
	}
	return "Flux"
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
	files, err := repoFiles(committed, l.gitOpsOf(rec.Spec, t))
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

// SyncStatus is the GitOps controller's account of the repo's sync: Flux's
// Kustomization as `flux get kustomizations` shows it, or Argo CD's Application as
// `argocd app get` does.
type SyncStatus struct {
	// Object is what the account is read from: kustomization/clusterset or
	// application/clusterset.
	Object string
	// Applied and Attempted are revisions as the controller names them (Flux:
	// main@sha1:<commit>; Argo CD: the commit).
	Applied, Attempted string
	// Ready is whether the revision applied is synced and healthy: Flux's Ready
	// condition; for Argo CD True when Synced and Healthy, False when the last sync of
	// Attempted failed (also while Argo CD retries it) or the health is Degraded.
	// Reason and Message say why (Flux: the condition's; Argo CD: the operation's
	// phase and message).
	Ready, Reason, Message string
	// Healthy and HealthMessage are the health of what was applied: Flux's Healthy
	// condition (while Flux checks a revision's health, Unknown and "Running health
	// checks for revision <revision> ..."); Argo CD's health status and message.
	Healthy, HealthMessage string
	// Handled is the last reconcile request (reconcile.fluxcd.io/requestedAt) Flux
	// acted on; Argo CD's sync status (Synced, OutOfSync).
	Handled string
}

func (s SyncStatus) String() string {
	return fmt.Sprintf("%s: applied %s, attempted %s, Ready=%s %s: %s", s.Object, s.Applied, s.Attempted, s.Ready, s.Reason, s.Message)
}

// SyncError is a commit the GitOps controller did not apply, or applied without the
// ClusterSet becoming Ready: its status says why (the webhook's refusal, a failed
// health check).
type SyncError struct {
	Revision string
	Status   SyncStatus
}

func (e *SyncError) Error() string {
	return fmt.Sprintf("%s did not sync %s: Ready=%s %s: %s", e.Status.Object, e.Revision, e.Status.Ready, e.Status.Reason, e.Status.Message)
}

// hubDynamic is a client of the hub for the GitOps controllers' objects.
func (l *Lab) hubDynamic() (dynamic.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", l.state.KubeconfigPath(topology.HubName))
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}

// Sync reads the GitOps controller's account of the repo's sync.
func (l *Lab) Sync(ctx context.Context) (SyncStatus, error) {
	g, err := l.gitOps()
	if err != nil {
		return SyncStatus{}, err
	}
	return g.read(ctx)
}

// Push commits changes to the repo (paths as gitserver.Repo.Change takes them) and asks
// the GitOps controller to sync, as a push to the lab's git server does; it returns the
// commit, to wait for with WaitSynced.
func (l *Lab) Push(ctx context.Context, changes map[string][]byte, message string, by gitserver.Author) (string, error) {
	commit, err := l.Repo().Change(ctx, changes, message, by)
	if err != nil {
		return "", err
	}
	return commit, l.RequestSync(ctx)
}

// RequestSync asks the GitOps controller to fetch the repo now, as the lab's git server
// does on a push: `flux reconcile source git clusterset` for Flux (the Kustomization
// follows a new revision by itself), a forge's push webhook to argocd-server for Argo CD.
func (l *Lab) RequestSync(ctx context.Context) error {
	g, err := l.gitOps()
	if err != nil {
		return err
	}
	return g.requestSync(ctx)
}

// WaitSynced waits until the GitOps controller applied commit and says the ClusterSet
// is Ready (Flux's Kustomization waits for it, Argo CD's health check judges it), or
// until it gave up on the commit: then the error is a *SyncError with its reason and
// message. A failure recorded on commit before the wait began (lab up again, after the
// webhook was down) is not the answer: WaitSynced asks for a new attempt, as `flux
// reconcile kustomization` or `argocd app sync` does, and judges that one.
func (l *Lab) WaitSynced(ctx context.Context, commit string, timeout time.Duration) (SyncStatus, error) {
	g, err := l.gitOps()
	if err != nil {
		return SyncStatus{}, err
	}
	return g.waitSync(ctx, commit, timeout, false)
}

// WaitApplied is WaitSynced that ends as soon as commit is applied and every ClusterSet
// in the hub is Ready at the generation it applied (as kstatus, Flux's health check,
// judges it: observedGeneration current, Ready True, neither Reconciling nor Stalled),
// without waiting for the GitOps controller to see that itself: Flux's health check
// looks every 5 s, the first time right after the apply, so it says Ready 5 s after the
// commit at the earliest. A test's commit waits so (labtest's CommitClusterSet); what a
// person sees after lab up, the controller's own Ready, is WaitSynced's. A commit whose
// ClusterSet does not become Ready ends as in WaitSynced, with the controller's verdict.
func (l *Lab) WaitApplied(ctx context.Context, commit string, timeout time.Duration) (SyncStatus, error) {
	g, err := l.gitOps()
	if err != nil {
		return SyncStatus{}, err
	}
	return g.waitSync(ctx, commit, timeout, true)
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

// gitStatus is the repo's head and the GitOps controller's view of it for lab status.
func (l *Lab) gitStatus(ctx context.Context) string {
	var b strings.Builder
	url, _ := l.GitURL()
	g, err := l.gitOps()
	if err != nil {
		fmt.Fprintf(&b, "  repo %s: %v\n", url, err)
		return b.String()
	}
	if head, err := l.Repo().Head(ctx); err != nil {
		fmt.Fprintf(&b, "  repo %s: %v\n", url, err)
	} else {
		fmt.Fprintf(&b, "  repo %s  head %s\n", url, g.revision(head))
	}
	if s, err := g.read(ctx); err != nil {
		fmt.Fprintf(&b, "  sync: %v\n", err)
	} else {
		fmt.Fprintf(&b, "  %s  applied %s  Ready=%s  %s\n", s.Object, s.Applied, s.Ready, s.Message)
	}
	return b.String()
}
