package k8sversion

import (
	"os"
	"strings"
	"testing"
)

// The binaries are built from test/k8sbin's module: a version bumped in one place and
// not the other would stamp new binaries with an old version, or look for them in the
// wrong directory.
func TestGoModAgrees(t *testing.T) {
	data, err := os.ReadFile("../../test/k8sbin/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "k8s.io/kubernetes" {
			if f[1] != Version {
				t.Fatalf("test/k8sbin/go.mod requires k8s.io/kubernetes %s, Version is %s", f[1], Version)
			}
			return
		}
	}
	t.Fatal("test/k8sbin/go.mod does not require k8s.io/kubernetes")
}
