package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/examples/clusterset/argocd"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/flux"
	"github.com/straitnet/strait/lab/gitserver"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// exitCode runs a command as a person at this machine would and returns its standard
// output, standard error and exit status, giving it two minutes.
func exitCode(t testing.TB, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return labtest.Run(t, 2*time.Minute, bin, args...)
}

// straitDiff runs `strait diff -f file` with the lab hub's kubeconfig alone, as a user
// does: it reaches the members at the LAN addresses their kubeconfig Secrets in the hub
// name, through the host's link into the lab.
func straitDiff(t testing.TB, file string) (stdout, stderr string, code int) {
	t.Helper()
	return exitCode(t, env.Strait, "diff", "-f", file, "--kubeconfig", env.Lab.State().KubeconfigPath(topology.HubName))
}

// kubectlDiff runs kubectl diff of file against the hub as Flux's field manager.
func kubectlDiff(t testing.TB, file string) (stdout, stderr string, code int) {
	t.Helper()
	return exitCode(t, filepath.Join(env.K8sBin, "kubectl"), "--kubeconfig", env.Lab.State().KubeconfigPath(topology.HubName),
		"diff", "--server-side", "--field-manager", "kustomize-controller", "-f", file)
}

// TestPushedExportAnswersInDNS: a person clones the lab's repo, commits an export and
// pushes; Flux applies it (the push asks it to sync, as a forge's webhook would), c1 gets
// the ServiceImport, its pods resolve the name and reach c2. Unexported, the name goes.
func TestPushedExportAnswersInDNS(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	const svc = "whereami-new"
	exportNew(t, svc)
	name := svc + ".sample.svc.clusterset.local"

	url, err := env.Lab.GitURL()
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "clusterset")
	labtest.Git(t, "", "clone", "--quiet", url, clone)
	file := filepath.Join(clone, filepath.FromSlash(lab.RepoClusterSet))
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	changed := labtest.ChangeClusterSet(t, data, func(cs *straitv1.ClusterSet) {
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: "sample", Name: svc, Clusters: []string{"c2"}})
	})
	if err := os.WriteFile(file, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	// Before the commit: what it will do, in the hub and in every member.
	out, errOut, code := straitDiff(t, file)
	if code != 1 || !strings.Contains(out, "+++ c1/multicluster.x-k8s.io/v1beta1/ServiceImport/sample/"+svc+" (merged)") ||
		!strings.Contains(out, "+++ hub/strait.io/v1alpha1/ClusterSet/") {
		t.Errorf("strait diff of the new export: exit %d, want 1 with the hub's ClusterSet and c1's new ServiceImport:\n%s%s", code, out, errOut)
	}
	if out, errOut, code := kubectlDiff(t, file); code != 1 || !strings.Contains(out, "+    name: "+svc) {
		t.Errorf("kubectl diff of the new export: exit %d, want 1 with the export added:\n%s%s", code, out, errOut)
	}
	labtest.Git(t, clone, "commit", "--quiet", "-am", "export sample/"+svc+" from c2")
	commit := labtest.Git(t, clone, "rev-parse", "HEAD")
	pushed := time.Now()
	labtest.Git(t, clone, "push", "--quiet", "origin", "HEAD")

	c1 := env.Client(t, "c1")
	require.Eventually(t, labtest.Converge, "c1: ServiceImport "+svc, func() error {
		return c1.Get(context.Background(), client.ObjectKey{Namespace: "sample", Name: svc}, &mcsv1.ServiceImport{})
	})
	imported := time.Since(pushed)
	resolvesTo(t, "c1", name, []string{env.ClusterSetIP(t, "c1", svc)})
	t.Logf("push → c1's ServiceImport %s, c1 resolves %s: %s (the push asks Flux to sync; GitRepository interval 1m, Kustomization interval 10m)",
		imported.Round(time.Millisecond), name, time.Since(pushed).Round(time.Millisecond))
	answeredBy(t, "c1", name+":80", "c2")
	s, err := env.Lab.WaitSynced(context.Background(), commit, labtest.Converge)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Kustomization: %s", s)
	if out, errOut, code := straitDiff(t, file); code != 0 || out != "" {
		t.Errorf("strait diff once Flux applied the commit: exit %d, want 0 and nothing:\n%s%s", code, out, errOut)
	}

	setExport(t, svc, false)
	t.Logf("unexport → NXDOMAIN in c1: %s", gone(t, "c1", name).Round(time.Millisecond))
}

// TestFluxWaitsForTheClusterSet: the Kustomization waits on the ClusterSet's health
// (wait: true, through kstatus). A commit while the hub cannot reach c2 is applied, but
// the Kustomization does not become Ready: the ClusterSet is not Ready, and after the
// health check's timeout the Kustomization is Ready=False naming it. Once c2 is reachable
// again the same commit becomes Ready.
func TestFluxWaitsForTheClusterSet(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	c2, _ := env.Topo.Cluster("c2")
	hubLink := ""
	for _, k := range c2.Links {
		if k.Namespace == env.Topo.Hub.Namespace {
			hubLink = k.Name
		}
	}
	if hubLink == "" {
		t.Fatalf("no link from the hub to c2 in the topology")
	}
	ctx := context.Background()
	if h, msg := argoHealth(t); h != "Healthy" {
		t.Errorf("Argo CD's health check of the lab's ClusterSet: %s (%s), want Healthy before the cut", h, msg)
	}
	setLink := func(state string) {
		t.Helper()
		if err := netns.IP(ctx, "-n", env.Topo.Hub.Namespace, "link", "set", hubLink, state); err != nil {
			t.Fatal(err)
		}
	}
	setLink("down")
	healed := false
	t.Cleanup(func() {
		if !healed {
			setLink("up")
		}
	})

	start := time.Now()
	err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: "sample", Name: "iperf3", Clusters: []string{"c2"}})
	})
	var unhealthy *lab.SyncError
	if !errors.As(err, &unhealthy) {
		t.Fatalf("a commit while c2 is unreachable: %v, want the Kustomization not Ready", err)
	}
	t.Logf("c2 unreachable: Kustomization Ready=%s after %s: %s", unhealthy.Status.Ready, time.Since(start).Round(time.Millisecond), unhealthy.Status.Message)
	// Flux's message is its poller's last error ("health check failed after 30s: ..."),
	// which may not name the object: the ClusterSet's own Ready condition does.
	if unhealthy.Status.Reason != "HealthCheckFailed" || !strings.Contains(unhealthy.Status.Message, "health check failed") {
		t.Errorf("Kustomization reason %s message %q, want HealthCheckFailed", unhealthy.Status.Reason, unhealthy.Status.Message)
	}
	cs := env.ClusterSet(t)
	ready := apimeta.FindStatusCondition(cs.Status.Conditions, "Ready")
	if ready == nil || ready.Status != "False" || !strings.Contains(ready.Message, "c2") {
		t.Errorf("ClusterSet Ready condition %+v, want False naming c2", ready)
	}
	if !slices.ContainsFunc(cs.Spec.Exports, func(e straitv1.ExportSpec) bool { return e.Name == "iperf3" }) {
		t.Errorf("the commit was not applied to the hub: exports %v", cs.Spec.Exports)
	}
	if h, msg := argoHealth(t); h != "Degraded" || !strings.Contains(msg, "c2") {
		t.Errorf("Argo CD's health check of the lab's ClusterSet with c2 unreachable: %s (%s), want Degraded naming c2", h, msg)
	}

	setLink("up")
	healed = true
	start = time.Now()
	// Flux tries again after the Kustomization's retryInterval; a try before the hub has
	// reached c2 again fails once more.
	s, err := waitReadyAgain(ctx, strings.TrimPrefix(unhealthy.Revision, "main@sha1:"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("c2 reachable again → Kustomization Ready in %s: %s", time.Since(start).Round(time.Millisecond), s)
	if h, msg := argoHealth(t); h != "Healthy" {
		t.Errorf("Argo CD's health check of the lab's ClusterSet once c2 is back: %s (%s), want Healthy", h, msg)
	}
}

// argoHealth runs the example's Argo CD health check (examples/clusterset/argocd) on the
// lab's live ClusterSet, as Argo CD would on its cached copy.
func argoHealth(t testing.TB) (status, message string) {
	t.Helper()
	script, err := argocd.HealthScript(filepath.Join(env.Root, "examples", "clusterset", "argocd", "argocd-cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(env.ClusterSet(t))
	if err != nil {
		t.Fatal(err)
	}
	// As Argo CD's cache holds it: decoded from JSON.
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	status, message, err = argocd.Health(script, u.Object)
	if err != nil {
		t.Fatal(err)
	}
	return status, message
}

// waitReadyAgain waits for the Kustomization to be Ready at commit after a failure.
func waitReadyAgain(ctx context.Context, commit string) (lab.SyncStatus, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s, err := env.Lab.WaitSynced(ctx, commit, time.Until(deadline))
		var se *lab.SyncError
		if err == nil || !errors.As(err, &se) || time.Now().After(deadline) {
			return s, err
		}
		time.Sleep(time.Second)
	}
}

// TestClusterSetComesFromGit: the hub's ClusterSet is the repo's, applied by Flux's
// kustomize-controller and no one else, at the revision lab status shows.
func TestClusterSetComesFromGit(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	cs := env.ClusterSet(t)
	if got := cs.Labels["kustomize.toolkit.fluxcd.io/name"]; got != "clusterset" {
		t.Errorf("ClusterSet labels %v, want kustomize.toolkit.fluxcd.io/name=clusterset (Flux's)", cs.Labels)
	}
	var managers []string
	for _, m := range cs.ManagedFields {
		if m.Subresource == "" && m.FieldsV1 != nil && strings.Contains(m.FieldsV1.GetRawString(), `"f:spec"`) {
			managers = append(managers, m.Manager)
		}
	}
	if !slices.Equal(managers, []string{"kustomize-controller"}) {
		t.Errorf("the ClusterSet's spec was written by %v, want only kustomize-controller", managers)
	}
	head, err := env.Lab.Repo().Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := env.Lab.WaitSynced(ctx, head, labtest.Converge)
	if err != nil {
		t.Fatal(err)
	}
	var status strings.Builder
	if err := env.Lab.Status(ctx, &status); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"head " + s.Applied, "applied " + s.Applied, "deployment/source-controller", "deployment/kustomize-controller"} {
		if !strings.Contains(status.String(), want) {
			t.Errorf("lab status does not show %q:\n%s", want, status.String())
		}
	}
}

// TestUpAgainRetriesAFailedSync: a sync Flux gave up on while the hub's webhook had no
// endpoints (someone scaled strait hub to zero) does not stop lab up again: up applies
// the install, which brings the hub back, and has Flux try the same commit once more,
// as `flux reconcile kustomization` would.
func TestUpAgainRetriesAFailedSync(t *testing.T) {
	env.Require(t)
	// Whatever happens below, the lab is whole again for the next test: here if the test
	// stops before its own lab up again.
	upAgain := false
	t.Cleanup(func() {
		if !upAgain {
			env.UpAgain(t)
		}
	})
	ctx := context.Background()
	head, err := env.Lab.Repo().Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env.Kubectl(t, topology.HubName, "-n", straitv1.SystemNamespace, "scale", "deployment/"+labtest.HubApp, "--replicas=0")
	env.Kubectl(t, topology.HubName, "-n", straitv1.SystemNamespace, "wait", "--for=delete", "pod", "-l", "app.kubernetes.io/name="+labtest.HubApp, "--timeout=2m")
	env.Kubectl(t, topology.HubName, "-n", flux.Namespace, "annotate", "--overwrite", "kustomization/"+flux.SyncName,
		meta.ReconcileRequestAnnotation+"="+time.Now().Format(time.RFC3339Nano))
	require.Eventually(t, time.Minute, "Flux fails to apply the ClusterSet without the webhook", func() error {
		s, err := env.Lab.Sync(ctx)
		if err != nil {
			return err
		}
		if s.Ready != "False" || !strings.Contains(s.Message, "webhook") {
			return errors.New(s.String())
		}
		return nil
	})
	start := time.Now()
	env.UpAgain(t)
	upAgain = true
	s, err := env.Lab.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := flux.Revision(gitserver.Branch, head); s.Applied != want || s.Ready != "True" {
		t.Errorf("after lab up again: %s, want %s applied and Ready", s, want)
	}
	t.Logf("lab up again with the hub scaled to zero and the sync failed: %s", time.Since(start).Round(time.Millisecond))
}

// TestLabGitCommands: what docs/lab.md tells a person to run against the lab's repo.
func TestLabGitCommands(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	state := "--state=" + env.Lab.State().Dir
	want, err := env.Lab.GitURL()
	if err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := exitCode(t, env.Strait, "lab", "git", "url", state); code != 0 || strings.TrimSpace(out) != want {
		t.Errorf("strait lab git url: exit %d, %q %s; want %s", code, out, errOut, want)
	}

	good := append(env.RepoClusterSet(t), "# touched by TestLabGitCommands\n"...)
	file := filepath.Join(t.TempDir(), "clusterset.yaml")
	if err := os.WriteFile(file, good, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := exitCode(t, env.Strait, "lab", "git", "commit", state, "-m", "a comment", file)
	head, herr := env.Lab.Repo().Head(context.Background())
	if code != 0 || herr != nil || !strings.Contains(out, "kustomization/clusterset applied main@sha1:"+head) {
		t.Errorf("strait lab git commit: exit %d, head %s (%v):\n%s%s", code, head, herr, out, errOut)
	}

	bad := labtest.ChangeClusterSet(t, good, func(cs *straitv1.ClusterSet) {
		cs.Spec.Clusters[1].PodCIDRs = slices.Clone(cs.Spec.Clusters[0].PodCIDRs)
	})
	if err := os.WriteFile(file, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = exitCode(t, env.Strait, "lab", "git", "commit", state, "-m", "overlap", file)
	if code != 1 || !strings.Contains(errOut, "spec.clusters[1].podCIDRs[0]") {
		t.Errorf("strait lab git commit of overlapping CIDRs: exit %d, want 1 with the webhook's field error:\n%s%s", code, out, errOut)
	}
}
