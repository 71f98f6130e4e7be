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
	Log   *slog.Logger
}

// Run keeps the block until ctx ends. Failures are logged and retried at the next tick:
// DNS keeps being served while the Corefile cannot be written.
func (k Keeper) Run(ctx context.Context) error {
	if k.Resync <= 0 {
		return fmt.Errorf("corefile: resync %s: must be positive", k.Resync)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	synced := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		zones, ok := k.Zones()
		if !ok {
			continue
		}
		if !synced {
			synced = true
			tick.Reset(k.Resync)
		}
		k.keep(ctx, zones)
	}
}

// keep writes the block for zones once, logging what happened.
func (k Keeper) keep(ctx context.Context, zones []string) {
	upstream, err := k.upstream(ctx)
	if err != nil {
		k.Log.Error("finding strait dns's address", "service", k.Service.String(), "err", err)
		return
	}
	changed, err := Apply(ctx, k.Client, k.ConfigMap, Block(zones, upstream), zones)
	switch {
	case err != nil:
		k.Log.Error("keeping the Corefile block", "configmap", k.ConfigMap.String(), "err", err)
	case changed:
		k.Log.Info("Corefile block written", "configmap", k.ConfigMap.String(), "zones", strings.Join(zones, ","), "upstream", upstream)
	}
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
