package cabletest

import (
	"os"
	"os/exec"
	"testing"
)

// RequireRoot skips t without root or the tools the lab needs, and fails it instead when
// the environment variable CI is set: CI must run every test.
func RequireRoot(t testing.TB, tools ...string) {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("CI") != "" {
		fail = t.Fatalf
	}
	if os.Geteuid() != 0 {
		fail("needs root to create network namespaces")
	}
	for _, tool := range append([]string{"ip", "ping"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			fail("needs %s: %v", tool, err)
		}
	}
}
