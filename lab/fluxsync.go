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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/flux"
	"github.com/straitnet/strait/lab/gitserver"
	"github.com/straitnet/strait/lab/topology"
)

// repoFluxDir is the Flux wiring's directory in the lab's repo.
const repoFluxDir = topology.GitOpsFlux

// fluxSync is Flux syncing the lab's repo: source- and kustomize-controller, the
// GitRepository and Kustomization of examples/clusterset/flux.
type fluxSync struct {
	l *Lab
	t *topology.Lab
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

func (f *fluxSync) wiring() (string, map[string][]byte, error) {
	files, err := labSync(f.t).SyncFiles()
	return repoFluxDir, files, err
}

func (f *fluxSync) revision(commit string) string { return flux.Revision(gitserver.Branch, commit) }

// images are the images of Flux's install manifest in the image directory.
func (f *fluxSync) images() ([]string, error) {
	return f.l.opts.workloadImages(flux.InstallFile, "make flux-images")
}

// install applies Flux's install manifest to the hub (kubectl apply --server-side -f,
// as `flux install` applies its own): CRDs, RBAC and the controllers, which wait for
// nothing of Strait's, so the lab starts them beside strait hub; start then starts the
// sync.
func (f *fluxSync) install(ctx context.Context) error {
	_, err := f.l.Kubectl(ctx, topology.HubName, "apply", "--server-side", "--force-conflicts",
		"-f", filepath.Join(f.l.opts.ImageDir, flux.InstallFile))
	return err
}

// start waits for Flux's controllers and applies the repo's flux/ directory, which
// points them at the lab's repo: from then on the ClusterSet comes from git.
func (f *fluxSync) start(ctx context.Context, client kubernetes.Interface, since time.Time, timeout time.Duration) error {
	l := f.l
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
	l.progress("hub: flux %s in %.1fs, syncing %s (kubectl apply -k %s/)", flux.Namespace, time.Since(since).Seconds(), hubGitURL(f.t), repoFluxDir)
	return nil
}

// settle has nothing to wait for: start waited for both of Flux's controllers.
func (f *fluxSync) settle(context.Context, kubernetes.Interface, time.Duration) error { return nil }

// FluxSyncDir is the repo's flux/ directory as the lab applied it to the hub (kubectl
// apply -k): deleting it (kubectl delete -k) stops the sync and, with prune on, makes
// Flux delete the ClusterSet.
func (l *Lab) FluxSyncDir() string {
	return filepath.Join(l.state.ClusterDir(topology.HubName), "flux-sync")
}

// gitRepositories and kustomizations are the resources of the lab's GitRepository and
// Kustomization.
func gitRepositories() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
}

func kustomizations() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
}

func (f *fluxSync) read(ctx context.Context) (SyncStatus, error) {
	c, err := f.l.hubDynamic()
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
	s := SyncStatus{Object: "kustomization/" + k.GetName()}
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

// requestSync asks source-controller to fetch the repo now, as `flux reconcile source
// git clusterset` does.
func (f *fluxSync) requestSync(ctx context.Context) error {
	c, err := f.l.hubDynamic()
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

func (f *fluxSync) waitSync(ctx context.Context, commit string, timeout time.Duration, applied bool) (SyncStatus, error) {
	c, err := f.l.hubDynamic()
	if err != nil {
		return SyncStatus{}, err
	}
	want := f.revision(commit)
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
