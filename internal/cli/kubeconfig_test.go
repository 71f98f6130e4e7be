package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
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

// A daemon's client is not held to client-go's 5 requests a second: the hub reads a
// kubeconfig and writes a record per member each reconcile.
func TestDaemonsAreNotThrottledClientSide(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kubeconfig")
	kc := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(file, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := RESTConfig(file, "strait-hub")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QPS >= 0 || cfg.UserAgent != "strait-hub" {
		t.Errorf("QPS %v, user agent %q; want no client-side limit (QPS < 0) and strait-hub", cfg.QPS, cfg.UserAgent)
	}
	set := &rest.Config{QPS: 50, Burst: 100}
	Unthrottled(set)
	if set.QPS != 50 {
		t.Errorf("a limit set by the caller became %v", set.QPS)
	}
}
