package wireguard_test

import (
	"context"
	"sync"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/straitnet/strait/nodeagent/cable/wireguard"
	"github.com/straitnet/strait/test/clusters"
)

// Against a real API server: several gateways starting at once all end up with one key.
func TestLoadOrCreateKeyOnAPIServer(t *testing.T) {
	c, err := client.New(clusters.NewCluster(t).Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wireguard.KeySecret("").Namespace}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}

	const gateways = 4
	keys := make([]wgtypes.Key, gateways)
	errs := make([]error, gateways)
	var wg sync.WaitGroup
	for i := range gateways {
		wg.Go(func() { keys[i], errs[i] = wireguard.LoadOrCreateKey(ctx, c, "") })
	}
	wg.Wait()
	for i := range gateways {
		if errs[i] != nil {
			t.Fatalf("gateway %d: %v", i, errs[i])
		}
		if keys[i] != keys[0] {
			t.Errorf("gateway %d got another key than gateway 0", i)
		}
	}
	var s corev1.Secret
	if err := c.Get(ctx, wireguard.KeySecret(""), &s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data[wireguard.PrivateKeyField]) != keys[0].String() {
		t.Errorf("the stored key is not the one the gateways use")
	}
}
