package drivers_test

import (
	"context"
	"io"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/drivers"
	"github.com/straitnet/strait/nodeagent/cable/wireguard"
)

var routing = cable.Routing{Table: 7310, Protocol: 207}

func TestNewBuildsTheNamedDriver(t *testing.T) {
	ctx := context.Background()
	opts := drivers.Options{Routing: routing, Client: fake.NewClientBuilder().Build(), VICISocket: "/nonexistent/charon.vici"}
	for _, name := range []straitv1.CableDriver{straitv1.CableVXLAN, straitv1.CableWireGuard, straitv1.CableIPsec} {
		d, err := drivers.New(ctx, name, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d.Name() != name {
			t.Errorf("New(%s) built %s", name, d.Name())
		}
		if c, ok := d.(io.Closer); ok {
			if err := c.Close(); err != nil {
				t.Errorf("close %s: %v", name, err)
			}
		}
	}
}

// The wireguard driver publishes the public half of the key kept in the member's Secret.
func TestNewWireGuardPublishesTheClustersKey(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	d, err := drivers.New(ctx, straitv1.CableWireGuard, drivers.Options{Routing: routing, Client: c})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.(io.Closer).Close() }()
	var s corev1.Secret
	if err := c.Get(ctx, wireguard.KeySecret("strait-system"), &s); err != nil {
		t.Fatal(err)
	}
	key, err := wgtypes.ParseKey(string(s.Data[wireguard.PrivateKeyField]))
	if err != nil {
		t.Fatal(err)
	}
	if d.PublicKey() != key.PublicKey().String() {
		t.Errorf("published %q, want the public half of the stored key", d.PublicKey())
	}
}

func TestNewRefusesWhatItCannotBuild(t *testing.T) {
	ctx := context.Background()
	for name, o := range map[straitv1.CableDriver]drivers.Options{
		"gre":               {Routing: routing},
		straitv1.CableIPsec: {Routing: routing},
	} {
		if d, err := drivers.New(ctx, name, o); err == nil {
			t.Errorf("New(%s, %+v) = %s, want an error", name, o, d.Name())
		}
	}
}

// Without the member's API (as `straitd agent --cleanup` may be) the wireguard driver is
// built to clean up, but refuses to converge without its key.
func TestWireGuardWithoutClientOnlyCleansUp(t *testing.T) {
	ctx := context.Background()
	d, err := drivers.New(ctx, straitv1.CableWireGuard, drivers.Options{Routing: routing})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.(io.Closer).Close() }()
	if d.PublicKey() != "" {
		t.Errorf("published %q without a key", d.PublicKey())
	}
	if err := d.Converge(ctx, cable.Local{ClusterID: "a"}, nil); err == nil {
		t.Error("converged without a key")
	}
}

// The key Secret lives in the agent's namespace.
func TestNewWireGuardKeepsItsKeyInTheAgentsNamespace(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().Build()
	d, err := drivers.New(ctx, straitv1.CableWireGuard, drivers.Options{Routing: routing, Client: c, Namespace: "strait-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.(io.Closer).Close() }()
	var s corev1.Secret
	if err := c.Get(ctx, wireguard.KeySecret("strait-test"), &s); err != nil {
		t.Fatal(err)
	}
}
