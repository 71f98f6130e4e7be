package corefile_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/test/require"
)

// TestKeeperFollowsTheMembership: the keeper writes the block once strait dns serves,
// takes it out when the cluster leaves its clusterset (an uninstall starts with the
// ClusterSet's deletion) and puts it back when the cluster rejoins, each within seconds,
// not at the next resync.
func TestKeeperFollowsTheMembership(t *testing.T) {
	key := configMap(t, "coredns-keeper", kubeadm)
	var left atomic.Bool
	k := corefile.Keeper{Client: k8s, ConfigMap: key, Upstream: "10.96.0.53:53", Resync: time.Hour,
		Zones: func() ([]string, bool) { return zones, true }, Left: left.Load, Log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	has := func(want bool) func() error {
		return func() error {
			got := strings.Contains(read(t, key).Data[corefile.Key], corefile.BeginMarker)
			if got != want {
				return fmt.Errorf("block in the Corefile: %v, want %v", got, want)
			}
			return nil
		}
	}
	require.Eventually(t, 5*time.Second, "the block written", has(true))
	left.Store(true)
	require.Eventually(t, 5*time.Second, "the block removed after leaving", has(false))
	if got := read(t, key).Data[corefile.Key]; got != kubeadm {
		t.Fatalf("Corefile after leaving is not the original:\n%s", got)
	}
	left.Store(false)
	require.Eventually(t, 5*time.Second, "the block back after rejoining", has(true))
}
