// Package sopsdecrypt checks that what `strait join --sops` writes is what SOPS itself
// decrypts (the library Flux's kustomize-controller decrypts with, at the version this
// module builds Flux from): the MAC verified, the kubeconfig in stringData.
package sopsdecrypt

import (
	"os"
	"strings"
	"testing"

	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/decrypt"
	"sigs.k8s.io/yaml"
)

func TestSOPSDecryptsStraitJoinsSecret(t *testing.T) {
	key, err := os.ReadFile("../../../cmd/strait/join/testdata/age-test-identity.txt")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOPS_AGE_KEY", strings.TrimSpace(string(key)))
	data, err := os.ReadFile("../../../cmd/strait/join/testdata/c3-kubeconfig.enc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := decrypt.DataWithFormat(data, formats.Yaml)
	if err != nil {
		t.Fatalf("sops: %v", err)
	}
	var s struct {
		Kind       string
		Metadata   struct{ Name, Namespace string }
		StringData map[string]string `json:"stringData"`
	}
	if err := yaml.Unmarshal(out, &s); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := "apiVersion: v1\nkind: Config\nclusters:\n- name: c3\n  cluster: {server: \"https://10.250.3.2:6443\"}\n"
	if s.Kind != "Secret" || s.Metadata.Name != "c3-kubeconfig" || s.Metadata.Namespace != "strait-system" || s.StringData["value"] != want {
		t.Errorf("decrypted:\n%s\nwant Secret strait-system/c3-kubeconfig with the kubeconfig under stringData.value", out)
	}
}
