package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/argocd"
	"github.com/straitnet/strait/lab/gitserver"
	"github.com/straitnet/strait/lab/manifest"
	"github.com/straitnet/strait/lab/topology"
)

// repoArgoCDDir is the Argo CD wiring's directory in the lab's repo.
const repoArgoCDDir = topology.GitOpsArgoCD

// argoSync is Argo CD syncing the lab's repo: its application controller, repo-server,
// Redis and argocd-server, with the Application and the ClusterSet health check of
// examples/clusterset/argocd.
type argoSync struct {
	l *Lab
	t *topology.Lab
}

// argoCDExample is examples/clusterset/argocd, the wiring users copy, which the lab
// installs as it is (beside Strait's kustomize directory in the checkout).
func (o Options) argoCDExample(name string) string {
	return filepath.Join(filepath.Dir(o.Kustomize), "examples", "clusterset", "argocd", name)
}

// application is the example Application on the lab's repo.
func (a *argoSync) application() (*unstructured.Unstructured, error) {
	example, err := os.ReadFile(a.l.opts.argoCDExample("application.yaml"))
	if err != nil {
		return nil, err
	}
	return argocd.Sync{URL: hubGitURL(a.t), Branch: gitserver.Branch, Path: repoClusterSetDir,
		TargetNamespace: straitv1.SystemNamespace}.Application(example)
}

// wiring is the repo's argocd/: the Application, and the argocd-cm settings (the
// ClusterSet's health check) merged into Argo CD's own.
func (a *argoSync) wiring() (string, map[string][]byte, error) {
	app, err := a.application()
	if err != nil {
		return "", nil, err
	}
	data, err := yaml.Marshal(app.Object)
	if err != nil {
		return "", nil, err
	}
	cm, err := os.ReadFile(a.l.opts.argoCDExample("argocd-cm.yaml"))
	if err != nil {
		return "", nil, err
	}
	return repoArgoCDDir, map[string][]byte{"application.yaml": data, "argocd-cm.yaml": cm}, nil
}

func (a *argoSync) revision(commit string) string { return commit }

func (a *argoSync) images() ([]string, error) {
	return a.l.opts.workloadImages(argocd.InstallFile, "make argocd-images")
}

// ArgoCDResync is how often the lab's Argo CD compares the Application with git and the
// hub again, where a user's does every 3 minutes: the lab's one change to Argo CD's
// behaviour, so that a test sees several resyncs find nothing out of sync.
const ArgoCDResync = 3 * time.Second

// installFile is the install the lab applied to the hub: make argocd-images' manifest
// with the example's argocd-cm settings merged, and the argocd Namespace first.
func (a *argoSync) installFile() string {
	return filepath.Join(a.l.state.ClusterDir(topology.HubName), argocd.InstallFile)
}

// install applies Argo CD to the hub as `kubectl apply --server-side -n argocd -f
// install.yaml` does, with the ClusterSet's health check in argocd-cm as a user adds it
// and the resync every ArgoCDResync.
func (a *argoSync) install(ctx context.Context) error {
	data, err := os.ReadFile(filepath.Join(a.l.opts.ImageDir, argocd.InstallFile))
	if err != nil {
		return fmt.Errorf("%w (make argocd-images)", err)
	}
	objs, err := manifest.Decode(data)
	if err != nil {
		return err
	}
	settings, err := os.ReadFile(a.l.opts.argoCDExample("argocd-cm.yaml"))
	if err != nil {
		return err
	}
	if err := argocd.WithSettings(objs, settings); err != nil {
		return err
	}
	if err := argocd.WithResync(objs, ArgoCDResync); err != nil {
		return err
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": argocd.Namespace}}}
	out, err := manifest.Encode(append([]*unstructured.Unstructured{ns}, objs...))
	if err != nil {
		return err
	}
	if err := os.WriteFile(a.installFile(), out, 0o644); err != nil {
		return err
	}
	_, err = a.l.Kubectl(ctx, topology.HubName, "apply", "--server-side", "--force-conflicts", "-f", a.installFile())
	return err
}

// start applies the repo's argocd/application.yaml once Argo CD's CRDs are established
// and its default project made, as a user applies it after the install: from then on
// the ClusterSet comes from git.
// The application controller syncs it as soon as it and the repo-server are up; nothing
// waits for them here (settle does).
func (a *argoSync) start(ctx context.Context, _ kubernetes.Interface, since time.Time, timeout time.Duration) error {
	l := a.l
	if _, err := l.Kubectl(ctx, topology.HubName, "wait", "--for", "condition=Established", "--timeout", timeout.String(),
		"crd/applications.argoproj.io", "crd/appprojects.argoproj.io"); err != nil {
		return err
	}
	// argocd-server creates the default AppProject when it starts; an Application the
	// controller sees before it is marked InvalidSpecError ("referencing project default
	// which does not exist") until its next full reconcile, 3 minutes on.
	if err := a.waitDefaultProject(ctx, timeout); err != nil {
		return err
	}
	// The controller compares the Application with what the repo-server renders; it does
	// not try a failed comparison again before that reconcile either (waitSync asks for a
	// refresh if it failed all the same, the repo-server's Service not yet routed).
	if _, err := l.Kubectl(ctx, topology.HubName, "wait", "--for", "condition=Available", "--timeout", timeout.String(),
		"-n", argocd.Namespace, "deployment/argocd-repo-server"); err != nil {
		return err
	}
	head, err := l.Repo().Head(ctx)
	if err != nil {
		return err
	}
	data, err := l.Repo().File(ctx, head, repoArgoCDDir+"/application.yaml")
	if err != nil {
		return err
	}
	file := filepath.Join(l.state.ClusterDir(topology.HubName), "argocd-application.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		return err
	}
	if _, err := l.Kubectl(ctx, topology.HubName, "apply", "--server-side", "-f", file); err != nil {
		return err
	}
	l.progress("hub: argo cd installed in %s %.1fs ago, syncing %s (kubectl apply -f %s/application.yaml)", argocd.Namespace, time.Since(since).Seconds(), hubGitURL(a.t), repoArgoCDDir)
	return nil
}

// waitDefaultProject waits for argocd-server to create the default AppProject. It reads
// it by its resource, known here: kubectl finds a resource type by the API server's
// discovery, which can lag behind the CRD's Established condition by seconds.
func (a *argoSync) waitDefaultProject(ctx context.Context, timeout time.Duration) error {
	c, err := a.l.hubDynamic()
	if err != nil {
		return err
	}
	projects := schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
	deadline := time.Now().Add(timeout)
	for {
		_, err := c.Resource(projects).Namespace(argocd.Namespace).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("argo cd: no AppProject default after %s (argocd-server makes it at start): %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// settle waits for every Argo CD workload: argocd-server, whose /api/webhook a push
// calls, says ready only on its readiness probe's second look, 30 s after its first.
func (a *argoSync) settle(ctx context.Context, client kubernetes.Interface, timeout time.Duration) error {
	return a.l.waitWorkloads(ctx, topology.HubName, argocd.Namespace, client, timeout)
}

// applications is the resource of Argo CD's Applications.
func applications() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
}

// requestSync sends argocd-server's /api/webhook what a forge sends on a push to the
// repo's branch (a GitHub push event): Argo CD refreshes the Applications of the repo at
// once and, with automated sync, syncs the new revision.
func (a *argoSync) requestSync(ctx context.Context) error {
	head, err := a.l.Repo().Head(ctx)
	if err != nil {
		return err
	}
	addr, err := a.serverAddr(ctx)
	if err != nil {
		return err
	}
	body, err := json.Marshal(pushEvent(hubGitURL(a.t), gitserver.Branch, head))
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr.String()+"/api/webhook", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	resp, err := (&http.Client{Transport: inNamespace(a.t.Hub.Namespace), Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("argocd-server webhook: %w", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("argocd-server webhook %s: %s: %s", req.URL, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// pushEvent is the body of a GitHub push event for commit on branch of the repository
// at cloneURL, the fields Argo CD reads: without a list of changed files, every
// Application of the repo and branch is refreshed.
func pushEvent(cloneURL, branch, commit string) map[string]any {
	return map[string]any{
		"ref":   "refs/heads/" + branch,
		"after": commit,
		"repository": map[string]any{
			"html_url":       strings.TrimSuffix(cloneURL, ".git"),
			"clone_url":      cloneURL,
			"default_branch": branch,
		},
	}
}

// serverAddr is a ready argocd-server pod's HTTP address, which the hub's namespace
// routes to (the hub's pods are on its node there).
func (a *argoSync) serverAddr(ctx context.Context) (netip.AddrPort, error) {
	client, err := a.l.clientset(*a.t.Hub)
	if err != nil {
		return netip.AddrPort{}, err
	}
	slices, err := client.DiscoveryV1().EndpointSlices(argocd.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=argocd-server"})
	if err != nil {
		return netip.AddrPort{}, err
	}
	for _, s := range slices.Items {
		port := int32(0)
		for _, p := range s.Ports {
			if p.Port != nil && (port == 0 || (p.Name != nil && *p.Name == "http")) {
				port = *p.Port
			}
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready || len(e.Addresses) == 0 || port == 0 {
				continue
			}
			addr, err := netip.ParseAddr(e.Addresses[0])
			if err != nil {
				return netip.AddrPort{}, err
			}
			return netip.AddrPortFrom(addr, uint16(port)), nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("argocd-server has no ready endpoint (kubectl -n %s get pods)", argocd.Namespace)
}

func (a *argoSync) read(ctx context.Context) (SyncStatus, error) {
	c, err := a.l.hubDynamic()
	if err != nil {
		return SyncStatus{}, err
	}
	s, err := readApplication(ctx, c)
	return s.SyncStatus, err
}

// appState is the Application's status as the lab reads it: SyncStatus and what the
// wait needs beyond it.
type appState struct {
	SyncStatus
	// operating says an operation (a sync, or its retries) is under way.
	operating bool
	// started is when the last operation started.
	started time.Time
	// unrendered is the message of a ComparisonError condition: the controller could not
	// get the repo's manifests (the repo-server unreachable, the repo not cloned).
	unrendered string
}

func readApplication(ctx context.Context, c dynamic.Interface) (appState, error) {
	app, err := c.Resource(applications()).Namespace(argocd.Namespace).Get(ctx, argocd.AppName, metav1.GetOptions{})
	if err != nil {
		return appState{}, err
	}
	return appStateOf(app), nil
}

// appStateOf reads an Application's status. The revision applied is the one the live
// state is Synced to (a commit that changes nothing in the hub is applied without a sync
// operation), else the last successful sync's (status.history); the one attempted is the
// last operation's.
func appStateOf(app *unstructured.Unstructured) appState {
	st := appState{SyncStatus: SyncStatus{Object: "application/" + app.GetName()}}
	s := &st.SyncStatus
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(app.Object, append([]string{"status"}, path...)...)
		return v
	}
	s.Handled = str("sync", "status")
	if s.Handled == "Synced" {
		s.Applied = str("sync", "revision")
	} else if history, _, _ := unstructured.NestedSlice(app.Object, "status", "history"); len(history) > 0 {
		last, _ := history[len(history)-1].(map[string]any)
		s.Applied, _ = last["revision"].(string)
	}
	s.Attempted = str("operationState", "syncResult", "revision")
	if s.Attempted == "" {
		s.Attempted = str("operationState", "operation", "sync", "revision")
	}
	phase := str("operationState", "phase")
	s.Reason, s.Message = phase, str("operationState", "message")
	s.Healthy, s.HealthMessage = str("health", "status"), str("health", "message")
	retries, _, _ := unstructured.NestedInt64(app.Object, "status", "operationState", "retryCount")
	st.operating = phase == "Running" || phase == "Terminating"
	st.started, _ = time.Parse(time.RFC3339, str("operationState", "startedAt"))
	conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "ComparisonError" {
			st.unrendered, _ = m["message"].(string)
		}
	}
	// A sync that failed, or failed and waits for its retry.
	failed := phase == "Failed" || phase == "Error" || phase == "Running" && retries > 0
	switch {
	case refused(st.unrendered):
		// Argo CD's diff is a server-side dry run of the apply (ServerSideApply=true
		// turns it on), which the webhook judges: a commit it refuses fails the
		// comparison, and no sync of it is tried.
		s.Attempted, s.Ready, s.Reason, s.Message = str("sync", "revision"), "False", "ComparisonError", st.unrendered
	case failed && s.Attempted != s.Applied || s.Healthy == "Degraded":
		s.Ready = "False"
	case s.Handled == "Synced" && s.Healthy == "Healthy" && !st.operating:
		s.Ready = "True"
	default:
		s.Ready = "Unknown"
	}
	return st
}

// refused says a message is an admission webhook's refusal.
func refused(message string) bool { return strings.Contains(message, "denied the request") }

// requestRefresh asks the controller to compare the Application with the repo again, as
// `argocd app get --refresh` does.
func requestRefresh(ctx context.Context, c dynamic.Interface) error {
	patch := []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"normal"}}}`)
	_, err := c.Resource(applications()).Namespace(argocd.Namespace).Patch(ctx, argocd.AppName, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// requestAppSync starts a sync of commit with the Application's options and retries, as
// `argocd app sync --revision` does (it sets the Application's operation). It asks
// nothing while an operation is under way.
func requestAppSync(ctx context.Context, c dynamic.Interface, commit string) error {
	app, err := c.Resource(applications()).Namespace(argocd.Namespace).Get(ctx, argocd.AppName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if _, ok, _ := unstructured.NestedMap(app.Object, "operation"); ok {
		return nil
	}
	sync := map[string]any{"revision": commit}
	if opts, ok, _ := unstructured.NestedStringSlice(app.Object, "spec", "syncPolicy", "syncOptions"); ok {
		sync["syncOptions"] = opts
	}
	op := map[string]any{"initiatedBy": map[string]any{"username": "strait-lab"}, "sync": sync}
	if retry, ok, _ := unstructured.NestedMap(app.Object, "spec", "syncPolicy", "retry"); ok {
		op["retry"] = retry
	}
	patch, err := json.Marshal(map[string]any{"operation": op})
	if err != nil {
		return err
	}
	_, err = c.Resource(applications()).Namespace(argocd.Namespace).Patch(ctx, argocd.AppName, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// waitSync waits as fluxSync's does, on the Application: a sync of commit that
// succeeded with the Application Healthy (or, applied, every ClusterSet Ready) ends it,
// a failed one ends it with a *SyncError unless the API server could not call the
// webhook (Argo CD retries that by the Application's retry policy). A failure of commit
// recorded before the wait began is not the answer: the wait starts a new sync of it and
// judges that one.
func (a *argoSync) waitSync(ctx context.Context, commit string, timeout time.Duration, applied bool) (SyncStatus, error) {
	c, err := a.l.hubDynamic()
	if err != nil {
		return SyncStatus{}, err
	}
	deadline := time.Now().Add(timeout)
	var since time.Time // a sync the wait started: failures before it are stale
	var refreshed time.Time
	read := false
	for {
		st, err := readApplication(ctx, c)
		s := st.SyncStatus
		failed := err == nil && s.Attempted == commit && s.Ready == "False" && !st.started.Before(since)
		switch {
		case err != nil:
		case st.unrendered != "" && !refused(st.unrendered) && time.Since(refreshed) > 2*time.Second:
			// The controller does not compare again by itself before its next full
			// reconcile, minutes away.
			if err := requestRefresh(ctx, c); err != nil {
				return s, err
			}
			refreshed = time.Now()
		case s.Applied == commit && s.Ready == "True":
			return s, nil
		case applied && s.Applied == commit && !st.operating && clusterSetsReady(ctx, c):
			return s, nil
		case failed && !read && !st.operating && s.Reason != "ComparisonError":
			// (A refusal at comparison is never stale: Argo CD compares again on
			// every refresh.)
			since = time.Now().Truncate(time.Second)
			if err := requestAppSync(ctx, c, commit); err != nil {
				return s, err
			}
		case failed && webhookUncalled(s.Message):
			// Not a refusal: Argo CD retries it by the Application's retry policy.
		case failed:
			return s, &SyncError{Revision: commit, Status: s}
		}
		read = read || err == nil
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New(s.String())
			}
			return s, fmt.Errorf("argo cd did not sync %s within %s: %w (kubectl -n %s get applications %s -o yaml)", commit, timeout, err, argocd.Namespace, argocd.AppName)
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
