package cable

import (
	"context"
	"net/netip"
	"time"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Local is this gateway's end of every cable.
type Local struct {
	// ClusterID of this cluster.
	ClusterID string
	// NodeName of this gateway node.
	NodeName string
	// IP this gateway receives tunnel traffic on.
	IP netip.Addr
	// Port the cable listens on.
	Port int32
	// CIDRs of this cluster that remote clusters route here (pod and service CIDRs, or
	// the global CIDR under globalnet).
	CIDRs []netip.Prefix
	// HealthCheckIP is an address of this gateway inside CIDRs that answers ICMP echo
	// through the tunnel.
	HealthCheckIP netip.Addr
	// PSK for ipsec; empty otherwise.
	PSK []byte
}

// Remote is one remote cluster's active gateway and what it routes.
type Remote struct {
	ClusterID string
	IP        netip.Addr
	Port      int32
	PublicKey string
	CIDRs     []netip.Prefix
}

// Connection is the state of the cable to one remote cluster.
type Connection struct {
	ClusterID     string
	Connected     bool
	LastHandshake time.Time
	RxBytes       int64
	TxBytes       int64
}

// Driver is one way of carrying traffic between gateways. Every method is
// level-triggered: Converge may be called again and again with the same input and must
// then change nothing; it removes connections to remotes no longer listed, also ones a
// previous process left.
type Driver interface {
	// Name of the driver as a ClusterSet names it.
	Name() straitv1.CableDriver
	// PublicKey is what remote gateways need to reach this one (wireguard), or "".
	PublicKey() string
	// Converge makes the local end and the connections exactly local and remotes.
	Converge(ctx context.Context, local Local, remotes []Remote) error
	// Connections reports the state of every connection.
	Connections(ctx context.Context) ([]Connection, error)
	// Cleanup removes everything the driver ever created on this node.
	Cleanup(ctx context.Context) error
}
