package main

import (
	"os/exec"
	"strings"
	"testing"
)

// Neither binary links test support: the lab ships inside strait, so what it uses
// (internal/netns, internal/k8sversion) is product code, and test/ holds only what
// tests import. Tools under hack/ are not shipped and may import test/.
func TestBinariesLinkNothingUnderTest(t *testing.T) {
	const testDir = "github.com/straitnet/strait/test/"
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".", "../straitd").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, testDir) {
				bad = append(bad, pkg+" imports "+imp)
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("strait or straitd links test support:\n%s", strings.Join(bad, "\n"))
	}
}
