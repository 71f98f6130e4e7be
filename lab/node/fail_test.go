package node_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/image"
	"github.com/straitnet/strait/lab/node"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

// TestAComponentThatDiesIsNamedWithItsLog starts a node whose kubelet exits at once:
// Start must start it again (three starts in all), then fail fast, name the kubelet, its
// log and the log's end, and leave nothing.
func TestAComponentThatDiesIsNamedWithItsLog(t *testing.T) {
	require.Root(t, "nsenter")
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bins := requireArtifacts(t, root)
	before := hostState(t)
	ns := netns.New(t, "nodefail")
	tmp, err := os.MkdirTemp("/run", "strait-node-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(tmp) })
	state := filepath.Join(tmp, "node")
	// A "kubelet" that says why it stops and exits 1.
	fake := filepath.Join(tmp, "kubelet")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'no API server configured' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(fake) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	started := time.Now()
	_, err = node.Start(ctx, node.Config{
		Name: "failing", NetNS: ns.Path(), NodeIP: netip.MustParseAddr("10.252.0.2"),
		PodCIDR: netip.MustParsePrefix("10.253.0.0/24"), KubeConfig: []byte("{}"),
		BinDir: bins.node, Kubelet: fake, StateDir: state,
		Images: []string{bins.image(image.Pause)}, SandboxImage: image.Pause,
	})
	if err == nil {
		t.Fatal("Start succeeded with a kubelet that exits")
	}
	for _, want := range []string{"kubelet ended early", filepath.Join(state, "logs", "kubelet.log"), "no API server configured"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	// Started again twice, as systemd would, before it gives up: each start left its line.
	if n := strings.Count(err.Error(), "no API server configured"); n != 3 {
		t.Errorf("the kubelet's log names its end %d times, want 3 (started three times):\n%v", n, err)
	}
	if d := time.Since(started); d > 20*time.Second {
		t.Errorf("Start took %s to notice the kubelet died", d)
	}
	assertNothingLeft(t, state, "failing", ns, before)
}
