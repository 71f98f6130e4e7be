package diff

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

// kubectl runs the kubectl of the test binaries against the hub and returns its exit
// status and output.
func kubectl(t *testing.T, args ...string) (int, string) {
	t.Helper()
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(clusters.Assets(root), "kubectl")
	if _, err := os.Stat(bin); err != nil {
		require.Skip(t, "no kubectl in %s (run make k8s-binaries)", clusters.Assets(root))
	}
	if _, err := exec.LookPath("diff"); err != nil {
		require.Skip(t, "kubectl diff needs the diff program")
	}
	out, err := exec.Command(bin, append([]string{"--kubeconfig", hubKubeconfig}, args...)...).CombinedOutput()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl %s: exit %d\n%s", strings.Join(args, " "), code, out)
	return code, string(out)
}

// kubectl diff of the ClusterSet file against the hub goes through the webhook too: a
// change exits 1 and shows it, a refused file exits above 1 with the webhook's field
// error, and the file Flux applied, diffed as Flux applies it, shows nothing.
func TestKubectlDiffOfTheClusterSetAgainstTheHub(t *testing.T) {
	needEnv(t)
	text := clusterSetYAML("kdiff", []string{"c1", "c2"})
	syncClusterSet(t, text)
	asFlux := []string{"diff", "--server-side", "--field-manager", "kustomize-controller", "-f"}

	if code, out := kubectl(t, append(asFlux, writeFile(t, text))...); code != 0 || out != "" {
		t.Errorf("the synced file: exit %d, %q; want 0 and nothing", code, out)
	}
	changed := strings.Replace(text, "podCIDRs: [10.2.0.0/16]", "podCIDRs: [10.2.0.0/17]", 1)
	code, out := kubectl(t, append(asFlux, writeFile(t, changed))...)
	if code != 1 || !strings.Contains(out, "-    - 10.2.0.0/16\n+    - 10.2.0.0/17\n") {
		t.Errorf("a changed CIDR: exit %d; want 1 and the CIDR's change", code)
	}
	// Plain kubectl diff (client-side) shows the change as well.
	if code, out := kubectl(t, "diff", "-f", writeFile(t, changed)); code != 1 || !strings.Contains(out, "+    - 10.2.0.0/17\n") {
		t.Errorf("kubectl diff without --server-side: exit %d; want 1 and the CIDR's change", code)
	}
	overlap := strings.Replace(text, "podCIDRs: [10.2.0.0/16]", "podCIDRs: [10.1.128.0/17]", 1)
	code, out = kubectl(t, append(asFlux, writeFile(t, overlap))...)
	// Only the webhook knows about overlaps: the CRD's schema cannot compare clusters.
	if code <= 1 || !strings.Contains(out, "clusters c1 and c2 overlap") ||
		!strings.Contains(out, "spec.clusters[1].podCIDRs[0]") || !strings.Contains(out, "10.1.128.0/17") {
		t.Errorf("overlapping CIDRs: exit %d; want >1 and the webhook's field error", code)
	}
}
