package join

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/gitserver"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// strait join --install --sops: Strait's member install applied to c3 again (the lab's
// overlay; unjoin leaves Strait installed), and c3's kubeconfig Secret goes into the repo, encrypted to the lab's
// age recipient, named in the kustomization beside the ClusterSet; nothing is written to
// the hub. One push, and Flux's kustomize-controller decrypts it into the hub with the
// ClusterSet naming c3: the hub connects to c3 with it and c1's pods reach c3's.
func TestJoinWithSOPS(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	hub := env.HostClient(t, topology.HubName)
	if _, err := hub.CoreV1().Secrets(straitv1.SystemNamespace).Get(ctx, "c3-kubeconfig", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the hub's Secret c3-kubeconfig before the join: %v; want none", err)
	}
	recipient, err := env.Lab.SOPSRecipient()
	if err != nil {
		t.Fatal(err)
	}
	head, err := env.Lab.Repo().Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"clusterset.yaml", "kustomization.yaml"} {
		data, err := env.Lab.Repo().File(ctx, head, "clusterset/"+name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c3, _ := env.Topo.Cluster("c3")
	server := "https://" + net.JoinHostPort(c3.ControlPlane.LANAddr.Addr().String(), strconv.Itoa(topology.APIPort))
	file := filepath.Join(dir, "clusterset.yaml")
	// --install with the overlay the lab installed c3 from: applied again, server-side.
	_, errOut, code := strait(t, "join", "c3", "--kubeconfig", env.Lab.State().KubeconfigPath("c3"), "--server", server,
		"--install", env.Lab.InstallDir("c3"), "--sops", recipient, "-f", file)
	enc, err := os.ReadFile(filepath.Join(dir, "c3-kubeconfig.enc.yaml"))
	kust, _ := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if code != 0 || err != nil || !strings.Contains(string(enc), "value: ENC[AES256_GCM,") || strings.Contains(string(enc), "server:") ||
		!strings.Contains(string(kust), "- c3-kubeconfig.enc.yaml") || !strings.Contains(errOut, "SOPS-encrypted") || !strings.Contains(errOut, "… applied ") {
		t.Fatalf("strait join --sops: exit %d, %v; want 0, the Secret encrypted beside the file and named in kustomization.yaml:\n%s\n%s", code, err, enc, kust)
	}
	if _, err := hub.CoreV1().Secrets(straitv1.SystemNamespace).Get(ctx, "c3-kubeconfig", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("strait join --sops wrote to the hub: %v", err)
	}
	changes := map[string][]byte{}
	for _, name := range []string{"clusterset.yaml", "kustomization.yaml", "c3-kubeconfig.enc.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		changes["clusterset/"+name] = data
	}
	by := gitserver.Author{Name: "e2e", Email: "e2e@strait.invalid", When: time.Now()}
	commit, err := env.Lab.Push(ctx, changes, "clusterset: join c3, its kubeconfig SOPS-encrypted", by)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.WaitSynced(t, commit); err != nil {
		t.Fatalf("Flux did not apply the join with the encrypted Secret: %v", err)
	}
	s, err := hub.CoreV1().Secrets(straitv1.SystemNamespace).Get(ctx, "c3-kubeconfig", metav1.GetOptions{})
	if err != nil || !strings.Contains(string(s.Data["value"]), "server: "+server) {
		t.Fatalf("the hub's Secret c3-kubeconfig after Flux applied it: %v; want the decrypted kubeconfig of %s", err, server)
	}
	require.Eventually(t, labtest.Converge, "the hub connected to c3 with the decrypted kubeconfig", func() error { return connected(t) })
	remote := env.SamplePods(t, "c3", lab.WhereamiSS)
	src := env.SourcePods(t, "c1")[0]
	if a, err := labtest.TryWhereami(src.NS, net.JoinHostPort(remote[0].Status.PodIP, "8080")); err != nil || a.Caller != src.IP {
		t.Errorf("c1 → c3's pod %s: %+v, %v; want an answer seeing the caller %s", remote[0].Status.PodIP, a, err, src.IP)
	}

	// Out again, git first: the entry goes; the Secret stays in git until the hub pruned c3.
	if _, _, code := strait(t, "unjoin", "c3", "-f", file); code != 0 {
		t.Fatalf("strait unjoin -f: exit %d", code)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.CommitClusterSet(t, data, "clusterset: unjoin c3"); err != nil {
		t.Fatalf("Flux did not apply the unjoin: %v", err)
	}
	require.Eventually(t, labtest.Converge, "the hub pruned c3", func() error {
		if hubCluster(t, "c3") != nil {
			return errors.New("c3 still in the ClusterSet's status")
		}
		return nil
	})
}
