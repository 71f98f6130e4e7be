package wireguard

import (
	"context"
	"fmt"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// KeySecret is the Secret in every member that holds its gateways' WireGuard private key.
var KeySecret = types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "strait-wireguard-key"}

// PrivateKeyField is the Secret data key of the private key (base64, as `wg genkey` writes).
const PrivateKeyField = "privateKey"

// LoadOrCreateKey returns the cluster's WireGuard private key from KeySecret, generating
// and storing a new one when the Secret does not exist. When two gateways race to create
// it, both end up with the one that was stored first.
func LoadOrCreateKey(ctx context.Context, c client.Client) (wgtypes.Key, error) {
	var s corev1.Secret
	err := c.Get(ctx, KeySecret, &s)
	if err == nil {
		return keyFromSecret(&s)
	}
	if !apierrors.IsNotFound(err) {
		return wgtypes.Key{}, fmt.Errorf("read WireGuard key secret %s: %w", KeySecret, err)
	}
	key, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		return wgtypes.Key{}, fmt.Errorf("generate WireGuard key: %w", err)
	}
	s = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: KeySecret.Namespace,
			Name:      KeySecret.Name,
			Labels:    map[string]string{"app.kubernetes.io/name": "strait", "app.kubernetes.io/component": "gateway"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{PrivateKeyField: []byte(key.String())},
	}
	err = c.Create(ctx, &s)
	if apierrors.IsAlreadyExists(err) {
		if err := c.Get(ctx, KeySecret, &s); err != nil {
			return wgtypes.Key{}, fmt.Errorf("read WireGuard key secret %s: %w", KeySecret, err)
		}
		return keyFromSecret(&s)
	}
	if err != nil {
		return wgtypes.Key{}, fmt.Errorf("store WireGuard key secret %s: %w", KeySecret, err)
	}
	return key, nil
}

func keyFromSecret(s *corev1.Secret) (wgtypes.Key, error) {
	raw, ok := s.Data[PrivateKeyField]
	if !ok {
		return wgtypes.Key{}, fmt.Errorf("secret %s has no %q", KeySecret, PrivateKeyField)
	}
	key, err := wgtypes.ParseKey(string(raw))
	if err != nil {
		return wgtypes.Key{}, fmt.Errorf("secret %s: %q: %w", KeySecret, PrivateKeyField, err)
	}
	return key, nil
}
