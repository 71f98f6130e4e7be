package drivers

import (
	"context"
	"fmt"

	"github.com/vishvananda/netlink"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/ipsec"
	"github.com/straitnet/strait/nodeagent/cable/vxlan"
	"github.com/straitnet/strait/nodeagent/cable/wireguard"
)

// Options is what any driver may need; each takes only what it uses.
type Options struct {
	// Routing is Strait's table and route protocol for routes to remote CIDRs.
	Routing cable.Routing
	// Client reads and writes the member cluster: wireguard keeps the cluster's key pair
	// in a Secret there. Without it a wireguard driver can only clean up.
	Client client.Client
	// Namespace of Strait's objects in the member ("" means strait-system).
	Namespace string
	// VICISocket is the charon sidecar's VICI socket (ipsec).
	VICISocket string
	// Netlink is the handle to program through; nil means the current namespace.
	Netlink *netlink.Handle
	// Logf receives a driver's background errors (wireguard-go's); nil drops them.
	Logf func(format string, args ...any)
	// Debugf receives a driver's routine background messages (wireguard-go's handshakes
	// and keepalives); nil drops them.
	Debugf func(format string, args ...any)
}

// New returns the driver called name. Drivers that hold resources beyond the kernel
// state (wireguard's embedded device, its wgctrl client) implement io.Closer. Building a
// driver changes nothing on the node; building the wireguard one with a Client creates
// the cluster's key Secret when it is missing.
func New(ctx context.Context, name straitv1.CableDriver, o Options) (cable.Driver, error) {
	switch name {
	case straitv1.CableVXLAN:
		return vxlan.New(vxlan.Config{Routing: o.Routing, Netlink: o.Netlink})
	case straitv1.CableWireGuard:
		cfg := wireguard.Config{Routing: o.Routing, Netlink: o.Netlink, Logf: o.Logf, Debugf: o.Debugf}
		if o.Client != nil {
			key, err := wireguard.LoadOrCreateKey(ctx, o.Client, o.Namespace)
			if err != nil {
				return nil, err
			}
			cfg.PrivateKey = key
		}
		return wireguard.New(cfg)
	case straitv1.CableIPsec:
		return ipsec.New(ipsec.Config{VICISocket: o.VICISocket, Routing: o.Routing, Netlink: o.Netlink})
	default:
		return nil, fmt.Errorf("unknown cable driver %q (want %s, %s or %s)", name,
			straitv1.CableWireGuard, straitv1.CableIPsec, straitv1.CableVXLAN)
	}
}
