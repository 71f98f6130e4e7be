package file

import (
	"strings"
	"testing"

	"github.com/straitnet/strait/internal/udiff"
)

// The trio as a user keeps it: flow-style kubeConfig references and CIDR lists.
const trio = `apiVersion: strait.io/v1alpha1
kind: ClusterSet
metadata:
  name: trio
  namespace: strait-system
spec:
  clusters:
    - name: c1   # the first
      kubeConfig: {secretRef: {name: c1-kubeconfig}}
      podCIDRs: ["10.10.0.0/16"]
      serviceCIDRs: ["10.110.0.0/16"]
    - name: c2
      kubeConfig: {secretRef: {name: c2-kubeconfig}}
      podCIDRs: ["10.20.0.0/16"]
      serviceCIDRs: ["10.120.0.0/16"]
  exports:
    - namespace: shop
      name: cart
      clusters: ["c1", "c2"]
    - namespace: shop
      name: db
      clusters: ["c2"]
    - namespace: sample
      name: everywhere
`

func body(t *testing.T, before string, after []byte) string {
	t.Helper()
	_, b, _ := strings.Cut(udiff.Unified("a", "b", before, string(after)), "+++ b\n")
	return b
}

// strait join -f: the new entry follows the entries before it, in their style; nothing
// else changes.
func TestAddClusterAppendsAnEntryInTheFilesStyle(t *testing.T) {
	after, err := AddCluster([]byte(trio), Member{Name: "c3", SecretName: "c3-kubeconfig", PodCIDRs: []string{"10.30.0.0/21"}, ServiceCIDRs: []string{"10.130.0.0/16"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `@@ -13,6 +13,10 @@
       kubeConfig: {secretRef: {name: c2-kubeconfig}}
       podCIDRs: ["10.20.0.0/16"]
       serviceCIDRs: ["10.120.0.0/16"]
+    - name: c3
+      kubeConfig: {secretRef: {name: c3-kubeconfig}}
+      podCIDRs: ["10.30.0.0/21"]
+      serviceCIDRs: ["10.130.0.0/16"]
   exports:
     - namespace: shop
       name: cart
`
	if got := body(t, trio, after); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}

	_, err = AddCluster([]byte(trio), Member{Name: "c2", SecretName: "c2-kubeconfig", PodCIDRs: []string{"10.30.0.0/16"}, ServiceCIDRs: []string{"10.130.0.0/16"}})
	if !IsNoChange(err) || !strings.Contains(err.Error(), "spec.clusters has a cluster c2 already") {
		t.Errorf("c2 again: %v; want a no-change error naming c2", err)
	}
	_, err = AddCluster([]byte(trio), Member{Name: "c3", SecretName: "c3-kubeconfig", PodCIDRs: []string{"10.20.0.0/16"}, ServiceCIDRs: []string{"10.130.0.0/16"}})
	if err == nil || !strings.Contains(err.Error(), "spec.clusters[2].podCIDRs[0]") {
		t.Errorf("c3 over c2's pod CIDR: %v; want the validator's field error", err)
	}
}

// strait unjoin -f: the entry goes, and the cluster from every export naming it; an
// export of that cluster alone goes with it, an export of every cluster stays.
func TestRemoveClusterTakesItOutOfTheExportsToo(t *testing.T) {
	after, err := RemoveCluster([]byte(trio), "c2")
	if err != nil {
		t.Fatal(err)
	}
	want := `@@ -9,16 +9,9 @@
       kubeConfig: {secretRef: {name: c1-kubeconfig}}
       podCIDRs: ["10.10.0.0/16"]
       serviceCIDRs: ["10.110.0.0/16"]
-    - name: c2
-      kubeConfig: {secretRef: {name: c2-kubeconfig}}
-      podCIDRs: ["10.20.0.0/16"]
-      serviceCIDRs: ["10.120.0.0/16"]
   exports:
     - namespace: shop
       name: cart
-      clusters: ["c1", "c2"]
-    - namespace: shop
-      name: db
-      clusters: ["c2"]
+      clusters: ["c1"]
     - namespace: sample
       name: everywhere
`
	if got := body(t, trio, after); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if _, err := RemoveCluster([]byte(trio), "c9"); !IsNoChange(err) {
		t.Errorf("c9: %v; want no change", err)
	}
}
