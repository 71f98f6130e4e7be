package corefile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultConfigMap is where kubeadm and most distributions keep CoreDNS's Corefile.
var DefaultConfigMap = types.NamespacedName{Namespace: "kube-system", Name: "coredns"}

// Key is the ConfigMap data key of the Corefile.
const Key = "Corefile"

// NewClient is a client for what this package reads and writes (ConfigMaps and
// Services), knowing no other types.
func NewClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return c, nil
}

// Apply keeps block in the Corefile of the ConfigMap cm. It reports whether it changed
// the ConfigMap; with our block already as wanted it writes nothing.
func Apply(ctx context.Context, c client.Client, cm types.NamespacedName, block string, zones []string) (bool, error) {
	return edit(ctx, c, cm, func(s string) (string, error) { return Ensure(s, block, zones) })
}

// Cleanup removes our block from the Corefile of cm; a missing ConfigMap or block is
// no error. It reports whether it changed the ConfigMap.
func Cleanup(ctx context.Context, c client.Client, cm types.NamespacedName) (bool, error) {
	changed, err := edit(ctx, c, cm, Remove)
	if client.IgnoreNotFound(err) == nil {
		return changed, nil
	}
	return changed, err
}

func edit(ctx context.Context, c client.Client, key types.NamespacedName, f func(string) (string, error)) (bool, error) {
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		changed = false
		var cm corev1.ConfigMap
		if err := c.Get(ctx, key, &cm); err != nil {
			return fmt.Errorf("reading ConfigMap %s: %w", key, err)
		}
		old, ok := cm.Data[Key]
		if !ok {
			return fmt.Errorf("ConfigMap %s has no %s", key, Key)
		}
		updated, err := f(old)
		if err != nil {
			return fmt.Errorf("editing %s of ConfigMap %s: %w", Key, key, err)
		}
		if updated == old {
			return nil
		}
		cm.Data[Key] = updated
		if err := c.Update(ctx, &cm); err != nil {
			return err
		}
		changed = true
		return nil
	})
	return changed, err
}
