package corefile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Keeper is the loop of `strait dns` that keeps our block in the Corefile: once the
// first snapshot is served (so CoreDNS never forwards to a server with nothing to say)
// and again every Resync, since anyone may rewrite the ConfigMap (kubeadm upgrades do).
type Keeper struct {
	Client client.Client
	// ConfigMap holds the Corefile (DefaultConfigMap).
	ConfigMap types.NamespacedName
	// Service fronts strait dns; CoreDNS forwards to its cluster IP, port 53.
	Service types.NamespacedName
	// Upstream, when set (IP:port), is forwarded to instead of the Service.
	Upstream string
	// Resync is how often the block is checked and put back.
	Resync time.Duration
	// Zones are the zones strait dns serves; ok is false until it serves any.
	Zones func() (zones []string, ok bool)
	// Left says whether the cluster has left its clusterset (its Membership, once there,
	// is gone: the ClusterSet dropped it or was deleted). The block is removed then, so
	// an uninstall leaves CoreDNS's Corefile as it was; it comes back if the cluster
	// rejoins. Nil never leaves.
	Left func() bool
	Log  *slog.Logger
}

// Run keeps the block until ctx ends: it looks every second and writes when the zones
// change or the cluster leaves or rejoins its clusterset, and every Resync regardless.
// Failures are logged and retried the next second: DNS keeps being served while the
// Corefile cannot be written.
func (k Keeper) Run(ctx context.Context) error {
	if k.Resync <= 0 {
		return fmt.Errorf("corefile: resync %s: must be positive", k.Resync)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var (
		done string // what was last written: the zones, or leftState
		at   time.Time
	)
	const leftState = "\x00left"
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		want, zones := leftState, []string(nil)
		if k.Left == nil || !k.Left() {
			var ok bool
			if zones, ok = k.Zones(); !ok {
				continue
			}
			want = strings.Join(zones, ",")
		}
		if want == done && time.Since(at) < k.Resync {
			continue
		}
		var ok bool
		if want == leftState {
			ok = k.remove(ctx)
		} else {
			ok = k.keep(ctx, zones)
		}
		if ok {
			done, at = want, time.Now()
		}
	}
}

// keep writes the block for zones once, logging what happened; false when it failed.
func (k Keeper) keep(ctx context.Context, zones []string) bool {
	upstream, err := k.upstream(ctx)
	if err != nil {
		k.Log.Error("finding strait dns's address", "service", k.Service.String(), "err", err)
		return false
	}
	changed, err := Apply(ctx, k.Client, k.ConfigMap, Block(zones, upstream), zones)
	switch {
	case err != nil:
		k.Log.Error("keeping the Corefile block", "configmap", k.ConfigMap.String(), "err", err)
		return false
	case changed:
		k.Log.Info("Corefile block written", "configmap", k.ConfigMap.String(), "zones", strings.Join(zones, ","), "upstream", upstream)
	}
	return true
}

// remove takes the block out of the Corefile, logging what happened; false when it
// failed.
func (k Keeper) remove(ctx context.Context) bool {
	removed, err := Cleanup(ctx, k.Client, k.ConfigMap)
	switch {
	case err != nil:
		k.Log.Error("removing the Corefile block", "configmap", k.ConfigMap.String(), "err", err)
		return false
	case removed:
		k.Log.Info("the cluster left its clusterset: Corefile block removed", "configmap", k.ConfigMap.String())
	}
	return true
}

// upstream is Upstream, else the cluster IP of the strait dns Service, port 53.
func (k Keeper) upstream(ctx context.Context) (string, error) {
	if k.Upstream != "" {
		return k.Upstream, nil
	}
	var s corev1.Service
	if err := k.Client.Get(ctx, k.Service, &s); err != nil {
		return "", fmt.Errorf("reading the strait dns Service: %w", err)
	}
	if net.ParseIP(s.Spec.ClusterIP) == nil {
		return "", errors.New("the strait dns Service has no cluster IP")
	}
	return net.JoinHostPort(s.Spec.ClusterIP, "53"), nil
}
