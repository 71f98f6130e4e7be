package wireguard_test

import (
	"context"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/straitnet/strait/nodeagent/cable/wireguard"
)

func keySecret(data string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: wireguard.KeySecret("").Namespace, Name: wireguard.KeySecret("").Name},
		Data:       map[string][]byte{wireguard.PrivateKeyField: []byte(data)},
	}
}

func TestLoadOrCreateKeyGeneratesOnceAndKeepsIt(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	first, err := wireguard.LoadOrCreateKey(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	if first == (wgtypes.Key{}) {
		t.Fatal("generated an all-zero key")
	}
	again, err := wireguard.LoadOrCreateKey(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("second call returned another key")
	}
	var s corev1.Secret
	if err := c.Get(ctx, wireguard.KeySecret(""), &s); err != nil {
		t.Fatal(err)
	}
	if got := string(s.Data[wireguard.PrivateKeyField]); got != first.String() {
		t.Errorf("secret holds %q, want the private key", got)
	}
	if len(s.Data) != 1 {
		t.Errorf("secret holds more than the private key: %v", s.Data)
	}
}

func TestLoadOrCreateKeyUsesExistingKey(t *testing.T) {
	key, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithObjects(keySecret(key.String())).Build()
	got, err := wireguard.LoadOrCreateKey(context.Background(), c, "")
	if err != nil || got != key {
		t.Fatalf("LoadOrCreateKey = %v, %v; want the stored key", got, err)
	}
}

func TestLoadOrCreateKeyRejectsCorruptSecret(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(keySecret("not a key")).Build()
	if _, err := wireguard.LoadOrCreateKey(context.Background(), c, ""); err == nil {
		t.Fatal("a corrupt key was accepted")
	}
}

// Two gateways start at once: the one that loses the race to create the Secret must use
// the winner's key, or the cluster would have two identities.
func TestLoadOrCreateKeyLosingTheRaceUsesTheWinnersKey(t *testing.T) {
	winner, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := c.Create(ctx, keySecret(winner.String())); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	got, err := wireguard.LoadOrCreateKey(context.Background(), c, "")
	if err != nil {
		t.Fatal(err)
	}
	if got != winner {
		t.Errorf("loser kept its own key")
	}
}
