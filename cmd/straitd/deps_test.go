package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The image's binary carries no development infrastructure: neither the lab's
// control-plane runner and pod emulation nor any test helper.
func TestDaemonsLeaveLabAndTestsOut(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const module = "github.com/straitnet/strait/"
	var bad []string
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg+"/", module+"lab/") || strings.HasPrefix(pkg+"/", module+"test/") {
			bad = append(bad, pkg)
		}
	}
	if len(bad) > 0 {
		t.Errorf("straitd depends on development packages:\n%s", strings.Join(bad, "\n"))
	}
}

func TestDaemonsAreTheSubcommands(t *testing.T) {
	var got []string
	for _, c := range newRootCmd().Commands() {
		got = append(got, c.Name())
	}
	if strings.Join(got, " ") != "agent charon dns hub probe version" {
		t.Errorf("straitd's subcommands are %v, want agent charon dns hub probe version", got)
	}
}
