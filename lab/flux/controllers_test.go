package flux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/straitnet/strait/lab/gitserver"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/freeport"
	"github.com/straitnet/strait/test/require"
)

// The built controllers, run as processes against a test API server, sync a commit from
// the lab's git server: source-controller clones it over smart HTTP and serves it as an
// artifact, kustomize-controller downloads that and applies it; a second commit reaches
// the cluster too. This is the path the lab's ClusterSet takes, minus the nodes.
func TestControllersSyncCommitsFromTheGitServer(t *testing.T) {
	r := pinned(t)
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bins := map[string]string{}
	for _, c := range Controllers() {
		bins[c] = filepath.Join(root, "bin", "flux", r.Version, c)
		if _, err := os.Stat(bins[c]); err != nil {
			require.Skip(t, "no %s: run make flux-binaries", bins[c])
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		require.Skip(t, "no git on PATH (Debian package git; make host-deps installs it)")
	}
	cluster := clusters.NewCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	objs, err := r.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := cluster.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}

	repo, first := labRepo(ctx, t, "1")
	url := serveGit(t, filepath.Dir(repo.Dir)) + "/clusterset.git"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, cluster.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	artifacts := freeport.Addr(t)
	runController(t, bins[SourceController], kubeconfig, "--storage-path="+t.TempDir(),
		"--storage-addr="+artifacts, "--storage-adv-addr="+artifacts)
	runController(t, bins[KustomizeController], kubeconfig)

	for _, obj := range []*unstructured.Unstructured{gitRepository(url), kustomization()} {
		require.Eventually(t, 30*time.Second, "creating "+obj.GetKind(), func() error {
			return cluster.Client.Create(ctx, obj.DeepCopy())
		})
	}
	took := waitApplied(ctx, t, cluster.Client, first, "1")
	t.Logf("first commit applied %.1fs after the GitRepository and Kustomization were created", took.Seconds())

	second, err := repo.Change(ctx, map[string][]byte{"configmap.yaml": configMap("2")}, "revision 2", gitserver.LabAuthor())
	if err != nil {
		t.Fatal(err)
	}
	// As `flux reconcile source git` does: the GitRepository's interval is a minute.
	gr := gitRepository(url)
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano)))
	if err := cluster.Client.Patch(ctx, gr, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	took = waitApplied(ctx, t, cluster.Client, second, "2")
	t.Logf("second commit applied %.1fs after the reconcile request", took.Seconds())
}

// labRepo is a bare repository whose commit holds a ConfigMap with data revision.
func labRepo(ctx context.Context, t *testing.T, revision string) (gitserver.Repo, string) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"kustomization.yaml": []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- configmap.yaml\n"),
		"configmap.yaml":     configMap(revision),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	repo, head, err := gitserver.Create(ctx, t.TempDir(), "clusterset", dir, "revision "+revision, gitserver.LabAuthor())
	if err != nil {
		t.Fatal(err)
	}
	return repo, head
}

func configMap(revision string) []byte {
	return []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: synced\n  namespace: default\ndata:\n  revision: \"" + revision + "\"\n")
}

func gitRepository(url string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"name": "clusterset", "namespace": Namespace},
		"spec":     map[string]any{"interval": "1m", "url": url, "ref": map[string]any{"branch": gitserver.Branch}},
	}}
}

func kustomization() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "clusterset", "namespace": Namespace},
		"spec": map[string]any{
			"interval": "1m", "prune": true, "path": "./",
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "clusterset"},
		},
	}}
}

// waitApplied waits for the Kustomization to report commit as applied and for the
// ConfigMap to carry revision, and returns how long that took.
func waitApplied(ctx context.Context, t *testing.T, c client.Client, commit, revision string) time.Duration {
	t.Helper()
	want := gitserver.Branch + "@sha1:" + commit
	return require.Eventually(t, 90*time.Second, "Flux applying "+want, func() error {
		k := kustomization()
		if err := c.Get(ctx, client.ObjectKeyFromObject(k), k); err != nil {
			return err
		}
		if got, _, _ := unstructured.NestedString(k.Object, "status", "lastAppliedRevision"); got != want {
			conds, _, _ := unstructured.NestedSlice(k.Object, "status", "conditions")
			return fmt.Errorf("lastAppliedRevision %q, conditions %v", got, conds)
		}
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "synced"}, cm); err != nil {
			return err
		}
		if cm.Data["revision"] != revision {
			return fmt.Errorf("ConfigMap synced has revision %q, want %q", cm.Data["revision"], revision)
		}
		return nil
	})
}

// serveGit serves the repositories under root on a loopback port until the test ends.
func serveGit(t *testing.T, root string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gitserver.Serve(ctx, l, root) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "http://" + l.Addr().String()
}

// runController runs a Flux controller binary against the test's API server, in
// flux-system, its HTTP endpoints on free loopback ports, until the test ends; its log is
// printed when the test fails.
func runController(t *testing.T, bin, kubeconfig string, args ...string) {
	t.Helper()
	args = append(args, "--log-encoding=console", "--metrics-addr="+freeport.Addr(t), "--health-addr="+freeport.Addr(t))
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "RUNTIME_NAMESPACE="+Namespace)
	logPath := filepath.Join(t.TempDir(), filepath.Base(bin)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		err := <-exited
		_ = logFile.Close()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Errorf("%s: %v", bin, err)
		}
		if t.Failed() {
			if log, err := os.ReadFile(logPath); err == nil {
				t.Logf("%s log (pid %d):\n%s", filepath.Base(bin), cmd.Process.Pid, lastBytes(log, 6000))
			}
		}
	})
}

func lastBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
