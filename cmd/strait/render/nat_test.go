package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The endpoints the file gives reach the Peers render prints: c1's gateways at their
// 1:1 public addresses (as the agent publishes them), c2 behind masquerade with nothing
// to dial.
func TestRenderShowsTheAdvertisedEndpoints(t *testing.T) {
	dir := t.TempDir()
	cs := `apiVersion: strait.io/v1alpha1
kind: ClusterSet
metadata: {name: nat, namespace: strait-system}
spec:
  clusters:
    - name: c1
      podCIDRs: ["10.8.0.0/16"]
      serviceCIDRs: ["10.88.0.0/16"]
      gateway:
        endpoint:
          type: Address
          nodeAddresses: [{node: c1-gw-0, address: 198.18.0.11}]
    - name: c2
      podCIDRs: ["10.9.0.0/16"]
      serviceCIDRs: ["10.99.0.0/16"]
      gateway:
        endpoint: {type: Masquerade}
`
	gateway := func(name, ip, local string) string {
		return "apiVersion: strait.io/v1alpha1\nkind: Gateway\nmetadata: {name: " + name + ", namespace: strait-system}\n" +
			"spec: {nodeName: " + name + ", haState: active, ip: '" + ip + "', localIP: " + local + ", port: 51871, driver: wireguard}\n"
	}
	files := map[string]string{
		"clusterset.yaml":  cs,
		"observed/c1.yaml": gateway("c1-gw-0", "198.18.0.11", "10.250.1.11"),
		"observed/c2.yaml": gateway("c2-gw-0", "", "10.250.2.11"),
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	peerOf := func(cluster string) string {
		out, _, err := render(t, &renderOptions{file: filepath.Join(dir, "clusterset.yaml"), observed: filepath.Join(dir, "observed"),
			clusters: []string{cluster}, output: "yaml"}, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(out, "\n---\n") {
			if strings.Contains(doc, "kind: Peer\n") {
				return doc
			}
		}
		t.Fatalf("no Peer in %s's render:\n%s", cluster, out)
		return ""
	}
	if p := peerOf("c2"); !strings.Contains(p, "ip: 198.18.0.11") || strings.Contains(p, "10.250.1.11") {
		t.Errorf("c2's Peer for c1 does not send to c1's public address:\n%s", p)
	}
	if p := peerOf("c1"); !strings.Contains(p, "behindMasquerade: true") || strings.Contains(p, "ip:") {
		t.Errorf("c1's Peer for c2 is not marked behind masquerade, or has an address to dial:\n%s", p)
	}
}
