package labtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fluxcd/pkg/apis/meta"
	straitv1 "github.com/straitnet/strait/api/v1alpha1"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/require"
)

// SwitchTimeout bounds a cable driver switch until the active gateways run the new
// driver and traffic flows.
const SwitchTimeout = 2 * time.Minute

// PSKSecret is the hub Secret the ClusterSet's pskSecretRef names for ipsec
// (EnsurePSKSecret).
const PSKSecret = "e2e-ipsec-psk"

// SetDriver makes cs use driver on its default port (ipsec with PSKSecret).
func SetDriver(cs *straitv1.ClusterSet, driver straitv1.CableDriver) {
	cs.Spec.Cable.Driver, cs.Spec.Cable.Port = driver, 0
	if driver == straitv1.CableIPsec {
		cs.Spec.Cable.PSKSecretRef = &meta.LocalObjectReference{Name: PSKSecret}
	}
}

// EnsurePSKSecret creates the hub's PSK Secret once.
func (e *Env) EnsurePSKSecret(t testing.TB) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: PSKSecret, Namespace: straitv1.SystemNamespace},
		Data: map[string][]byte{"psk": []byte("a pre-shared key the e2e tests share")}}
	if err := e.Client(t, topology.HubName).Create(context.Background(), s); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// WaitActiveGateway waits until the cluster's active Gateway publishes driver.
func (e *Env) WaitActiveGateway(t testing.TB, cluster string, driver straitv1.CableDriver) {
	t.Helper()
	require.Eventually(t, SwitchTimeout, cluster+": active gateway on "+string(driver), func() error {
		gws := &straitv1.GatewayList{}
		if err := e.Client(t, cluster).List(context.Background(), gws, client.InNamespace(straitv1.SystemNamespace)); err != nil {
			return err
		}
		var seen []string
		for _, g := range gws.Items {
			if g.Spec.HAState == straitv1.HAActive && g.Spec.Driver == driver {
				return nil
			}
			seen = append(seen, fmt.Sprintf("%s %s %s", g.Name, g.Spec.HAState, g.Spec.Driver))
		}
		return fmt.Errorf("gateways: %v", seen)
	})
}

// SwitchCable commits the ClusterSet with driver (and the PSK Secret for ipsec) and
// waits until every member's active gateway runs it. The error is UpdateClusterSet's.
func (e *Env) SwitchCable(t testing.TB, driver straitv1.CableDriver) error {
	t.Helper()
	e.EnsurePSKSecret(t)
	if err := e.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) { SetDriver(cs, driver) }); err != nil {
		return err
	}
	for _, c := range e.Topo.Clusters {
		e.WaitActiveGateway(t, c.Name, driver)
	}
	return nil
}
