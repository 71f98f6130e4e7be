package cable

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
	"time"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Local is this gateway's end of every cable.
type Local struct {
	// ClusterID of this cluster.
	ClusterID string
	// NodeName of this gateway node.
	NodeName string
	// IP is this gateway's own address for the cable: it binds and sources tunnel
	// traffic from it and finds the underlay (MTU) by it. The node owns it.
	IP netip.Addr
	// Advertised is where the other clusters' gateways send tunnel traffic to: IP, or an
	// address of a NAT in front of this gateway (a cloud's 1:1 public address) that the
	// node does not own. Invalid when this cluster's gateways cannot be dialed at all
	// (behind masquerade only).
	Advertised netip.Addr
	// BehindMasquerade: nothing can dial this gateway (its cluster's gateways share one
	// source NAT that forwards nothing in), so it initiates every connection and keeps the
	// NAT's mapping alive.
	BehindMasquerade bool
	// Port the cable listens on.
	Port int32
	// CIDRs of this cluster that remote clusters route here (pod and service CIDRs, or
	// the global CIDR under globalnet).
	CIDRs []netip.Prefix
	// HealthCheckIP is an address of this gateway inside CIDRs that answers ICMP echo
	// through the tunnel.
	HealthCheckIP netip.Addr
	// HealthCheckIPv6 is the IPv6 counterpart of HealthCheckIP, inside an IPv6 prefix of
	// CIDRs; invalid when the cluster routes no IPv6 here. Drivers use it as the source
	// of their routes to remote IPv6 CIDRs, as HealthCheckIP for IPv4 ones.
	HealthCheckIPv6 netip.Addr
	// PSK for ipsec; empty otherwise.
	PSK []byte
}

// Remote is one remote cluster's active gateway and what it routes.
type Remote struct {
	ClusterID string
	// IP is the remote gateway's advertised address, where tunnel traffic goes; invalid
	// when the remote is behind masquerade only: this end then learns its address from
	// the remote's authenticated handshake.
	IP netip.Addr
	// BehindMasquerade: the remote cannot be dialed; it initiates.
	BehindMasquerade bool
	Port             int32
	PublicKey        string
	// CIDRs the remote routes here, of either family: a cable carries IPv6 prefixes
	// beside IPv4 ones whatever its underlay's family.
	CIDRs []netip.Prefix
}

// Connection is the state of the cable to one remote cluster.
type Connection struct {
	ClusterID     string
	Connected     bool
	LastHandshake time.Time
	RxBytes       int64
	TxBytes       int64
	// Endpoint is the remote address and port the cable sends to now: the advertised one,
	// or where the remote's authenticated packets came from (behind a NAT).
	Endpoint netip.AddrPort
	// NATDetected: a NAT sits between the two gateways (the driver saw the other end at
	// an address it did not advertise, or IKE's NAT detection said so).
	NATDetected bool
}

// Overheads is what a cable adds to every packet, by the family of its underlay (the
// outer header's): the MTU of the cable's device and of routes into it is the underlay
// MTU less the overhead of Local.IP's family.
type Overheads struct {
	IPv4, IPv6 int
}

// For is the overhead over an underlay address of ip's family.
func (o Overheads) For(ip netip.Addr) int {
	if ip.Is6() && !ip.Is4In6() {
		return o.IPv6
	}
	return o.IPv4
}

// Max is the larger overhead: what to subtract while the underlay's family is unknown.
func (o Overheads) Max() int { return max(o.IPv4, o.IPv6) }

// ByCluster is how a driver's Connections are ordered: by ClusterID.
func ByCluster(cs []Connection) []Connection {
	slices.SortFunc(cs, func(a, b Connection) int { return cmp.Compare(a.ClusterID, b.ClusterID) })
	return cs
}

// Routing is where a driver installs the routes to remote clusters' CIDRs through its own
// device: Strait's routing table and route protocol. Only the driver knows how its device
// reaches a remote (a VXLAN VTEP next hop, a WireGuard peer, strongSwan's libipsec TUN),
// so the driver owns exactly those routes — in Table, marked with Protocol, via its own
// device — and nothing else in the table. The route agent owns the policy rule that sends
// remote traffic to Table and every other route in it (e.g. via vx-strait on plain nodes).
type Routing struct {
	// Table is Strait's routing table number.
	Table int
	// Protocol is Strait's route protocol number; it marks routes as ours.
	Protocol int
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
	// Converge makes the local end and the connections exactly local and remotes, and the
	// routes to every remote's CIDRs through the driver's device (see Routing).
	Converge(ctx context.Context, local Local, remotes []Remote) error
	// Connections reports the state of every connection.
	Connections(ctx context.Context) ([]Connection, error)
	// Cleanup removes everything the driver ever created on this node.
	Cleanup(ctx context.Context) error
}

// Watcher is a Driver whose state can change behind the agent's back: charon restarting
// forgets every connection the agent loaded. Watch calls changed whenever that may have
// happened, so the agent converges at once instead of at its next resync; it returns when
// ctx ends.
type Watcher interface {
	Watch(ctx context.Context, changed func())
}
