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

// KeySecretName is the Secret in every member (in Strait's namespace, by default
// strait-system) that holds its gateways' WireGuard private key.
const KeySecretName = "strait-wireguard-key"

// KeySecret is the key Secret in namespace ("" means strait-system).
func KeySecret(namespace string) types.NamespacedName {
	if namespace == "" {
		namespace = straitv1.SystemNamespace
	}
	return types.NamespacedName{Namespace: namespace, Name: KeySecretName}
}

// PrivateKeyField is the Secret data key of the private key (base64, as `wg genkey` writes).
const PrivateKeyField = "privateKey"

// LoadOrCreateKey returns the cluster's WireGuard private key from the key Secret in
// namespace, generating and storing a new one when the Secret does not exist. When two
// gateways race to create it, both end up with the one that was stored first.
func LoadOrCreateKey(ctx context.Context, c client.Client, namespace string) (wgtypes.Key, error) {
	name := KeySecret(namespace)
	var s corev1.Secret
	err := c.Get(ctx, name, &s)
	if err == nil {
		return keyFromSecret(name, &s)
	}
	if !apierrors.IsNotFound(err) {
		return wgtypes.Key{}, fmt.Errorf("read WireGuard key secret %s: %w", name, err)
	}
	key, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		return wgtypes.Key{}, fmt.Errorf("generate WireGuard key: %w", err)
	}
	s = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: name.Namespace,
			Name:      name.Name,
			Labels:    map[string]string{"app.kubernetes.io/name": "strait", "app.kubernetes.io/component": "gateway"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{PrivateKeyField: []byte(key.String())},
	}
	err = c.Create(ctx, &s)
	if apierrors.IsAlreadyExists(err) {
		if err := c.Get(ctx, name, &s); err != nil {
			return wgtypes.Key{}, fmt.Errorf("read WireGuard key secret %s: %w", name, err)
		}
		return keyFromSecret(name, &s)
	}
	if err != nil {
		return wgtypes.Key{}, fmt.Errorf("store WireGuard key secret %s: %w", name, err)
	}
	return key, nil
}

func keyFromSecret(name types.NamespacedName, s *corev1.Secret) (wgtypes.Key, error) {
	raw, ok := s.Data[PrivateKeyField]
	if !ok {
		return wgtypes.Key{}, fmt.Errorf("secret %s has no %q", name, PrivateKeyField)
	}
	key, err := wgtypes.ParseKey(string(raw))
	if err != nil {
		return wgtypes.Key{}, fmt.Errorf("secret %s: %q: %w", name, PrivateKeyField, err)
	}
	return key, nil
}
