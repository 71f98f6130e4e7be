package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Without any kubeconfig a person is told which flag gives one, not client-go's advice
// to set KUBERNETES_MASTER; a file that is there but broken is named with its error.
func TestPersonConfigSaysWhichFlagGivesAKubeconfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KUBECONFIG", filepath.Join(dir, "none"))
	_, err := PersonConfig("the hub", "", "", "--hub-kubeconfig")
	if err == nil || !strings.Contains(err.Error(), "no kubeconfig for the hub: give --hub-kubeconfig FILE, or set KUBECONFIG") ||
		strings.Contains(err.Error(), "KUBERNETES_MASTER") {
		t.Errorf("no kubeconfig anywhere: %v; want the flag named", err)
	}

	broken := filepath.Join(dir, "broken")
	if err := os.WriteFile(broken, []byte("apiVersion: v1\nkind: Config\ncurrent-context: gone\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = PersonConfig("the member", broken, "", "--kubeconfig")
	if err == nil || !strings.HasPrefix(err.Error(), "the member's kubeconfig: ") || !strings.Contains(err.Error(), "gone") {
		t.Errorf("a kubeconfig whose current context is missing: %v; want it named with client-go's reason", err)
	}
}
