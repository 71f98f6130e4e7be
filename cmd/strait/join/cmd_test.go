package join

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/straitnet/strait/internal/cli"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: x, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts:
- {name: c1, context: {cluster: x, user: u}}
- {name: c3, context: {cluster: x, user: u}}
- {name: hub, context: {cluster: x, user: u}}
`

const clusterSet = `apiVersion: strait.io/v1alpha1
kind: ClusterSet
metadata: {name: demo, namespace: strait-system}
spec:
  clusters:
    - name: c1
      podCIDRs: ["10.8.0.0/16"]
      serviceCIDRs: ["10.88.0.0/16"]
`

func strait(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	root := &cobra.Command{Use: "strait"}
	root.AddCommand(NewJoinCommand(), NewUnjoinCommand())
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	code := cli.Main(root, args, &errOut)
	return out.String(), errOut.String(), code
}

// Completion: join offers the member kubeconfig's contexts the file has no cluster of,
// unjoin the file's clusters, --hub-context the hub kubeconfig's contexts.
func TestCompletionOffersClusterNames(t *testing.T) {
	dir := t.TempDir()
	kc, cs := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "clusterset.yaml")
	if err := os.WriteFile(kc, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cs, []byte(clusterSet), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "join", "--kubeconfig", kc, "-f", cs, ""}, "c3\nhub\n:4\n"},
		{[]string{"__complete", "unjoin", "-f", cs, ""}, "c1\n:4\n"},
		{[]string{"__complete", "join", "c3", "--hub-kubeconfig", kc, "--hub-context", ""}, "c1\nc3\nhub\n:4\n"},
	} {
		if out, _, _ := strait(t, tc.args...); out != tc.want {
			t.Errorf("%v: %q, want %q", tc.args[1:], out, tc.want)
		}
	}
}

// Bad input is refused before any cluster is asked, naming the flag or the value.
func TestJoinRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"join", "C3", "--hub-context", "hub"}, `cluster name "C3": a lowercase RFC 1123 label`},
		{[]string{"join", "c3", "--sops", "age1xyz"}, `--sops "age1xyz": not an age recipient`},
		{[]string{"join", "c3", "--sops", "age1xyz", "--hub-context", "hub"}, "--sops and --hub-kubeconfig/--hub-context: the Secret goes either into the repo"},
		{[]string{"join", "c3"}, "give the hub's --hub-kubeconfig or --hub-context, or --sops AGE_RECIPIENT"},
		{[]string{"join", "c3", "--hub-context", "hub", "--pod-cidr", "10.8.0.1/16"}, `--pod-cidr/--service-cidr "10.8.0.1/16": want a network address`},
		{[]string{"join", "c3", "--hub-context", "hub", "-o", "table"}, `-o/--output "table": want json or yaml`},
		{[]string{"join", "c3", "--hub-context", "hub", "--server", "10.250.3.2:6443"}, `--server "10.250.3.2:6443": want the API server's https URL`},
		{[]string{"unjoin", "c3"}, "nothing to undo: give -f"},
		{[]string{"unjoin", "c3", "--commit"}, "--commit: give the ClusterSet file to commit with -f"},
	} {
		_, errOut, code := strait(t, tc.args...)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want 1 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
