package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"io"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/labtest"
)

// TestGatherHoldsWhatSupportNeedsAndNoSecret: strait gather, given the hub's and each
// member's kubeconfig, writes a tarball holding the ClusterSet, every member's Strait
// objects, the daemons' logs, every agent's kernel dump (vx-strait there), the Corefile
// with strait dns's block and the versions; and not one value of any Secret in
// strait-system of the hub and the members (the kubeconfig Secrets' tokens, the hub
// access tokens, the WireGuard keys, the IPsec PSK), plain or base64.
func TestGatherHoldsWhatSupportNeedsAndNoSecret(t *testing.T) {
	env.Require(t)
	args := []string{"gather", "--dir", t.TempDir()}
	clusters := append([]string{topology.HubName}, members()...)
	for _, c := range clusters {
		args = append(args, "--member-kubeconfig", c+"="+env.Lab.State().KubeconfigPath(c))
	}
	out, errOut, code := exitCode(t, env.Strait, args...)
	t.Logf("strait gather: exit %d\n%s%s", code, out, errOut)
	if code != 0 {
		t.Fatalf("strait gather: exit %d, want 0", code)
	}
	files := untar(t, strings.TrimSpace(out))
	var names []string
	for n := range files {
		names = append(names, n)
	}
	t.Logf("%d files: %s", len(files), strings.Join(names, " "))
	want := map[string]string{
		"versions.txt": "Kubernetes v",
		topology.HubName + "/objects/clustersets.yaml":       "kind: ClusterSet",
		topology.HubName + "/objects/clustersetmembers.yaml": "kind: ClusterSetMember",
	}
	for _, c := range members() {
		want[c+"/objects/memberships.yaml"] = "clusterID: " + c
		want[c+"/objects/peers.yaml"] = "kind: Peer"
		want[c+"/Corefile"] = corefile.BeginMarker
		for _, n := range env.Topo.Clusters {
			if n.Name != c {
				continue
			}
			for _, node := range n.Nodes {
				want[c+"/dump/"+node.Name+".txt"] = "link " + route.VXLANDevice
			}
		}
		agent := env.StraitPods(t, c, labtest.AgentApp, "")[0]
		want[c+"/logs/"+agent.Name+"_agent.log"] = ""
	}
	for name, s := range want {
		data, ok := files[name]
		if !ok {
			t.Errorf("no %s in the tarball", name)
		} else if !strings.Contains(data, s) {
			t.Errorf("%s does not hold %q", name, s)
		}
	}
	secrets := 0
	for _, c := range clusters {
		list, err := env.HostClient(t, c).CoreV1().Secrets(straitv1.SystemNamespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range list.Items {
			for k, v := range s.Data {
				// A token Secret's namespace and the cluster's CA certificate are no
				// secrets: the namespace is in every object's metadata.
				if len(v) < 8 || k == corev1.ServiceAccountNamespaceKey || k == corev1.ServiceAccountRootCAKey {
					continue
				}
				secrets++
				for name, data := range files {
					if strings.Contains(data, string(v)) || strings.Contains(data, base64.StdEncoding.EncodeToString(v)) {
						t.Errorf("%s holds the value of Secret %s/%s key %s", name, c, s.Name, k)
					}
				}
			}
		}
	}
	if secrets == 0 {
		t.Error("no Secret value to look for: the check looked at nothing")
	}
	t.Logf("%d Secret values looked for in %d files", secrets, len(files))
}

// untar reads a .tar.gz into its files' contents by name, without the top directory.
func untar(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := io.Copy(&b, tr); err != nil {
			t.Fatal(err)
		}
		_, name, _ := strings.Cut(h.Name, "/")
		out[name] = b.String()
	}
	return out
}
