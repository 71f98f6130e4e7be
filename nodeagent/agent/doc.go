// Package agent wires `straitd agent`: it watches the Membership, Peers, Nodes, the
// gateway Lease and (on the active gateway under globalnet) GlobalIngresses and
// EndpointSlices, builds a Snapshot of them, computes the node's whole desired data
// plane from it (Compute, pure) and converges the kernel and the cable to it
// (Dataplane). It runs the gateway election on gateway-capable nodes, publishes the
// node's Gateway object and, on the active gateway, health-checks every Peer into its
// status. Triggers: watch events, netlink events, the election, and a periodic full
// resync.
//
// It writes Gateway objects (its node's; on the active gateway, another node's still
// marked active is marked passive), Peer status, its own build's entry in the
// Membership's status.daemons (internal/daemonbuild; the active gateway also takes out
// the entries of nodes that are gone) and, through the cable driver factory it is given,
// the cluster's WireGuard key Secret when it is missing. It never writes what the hub
// owns: the Membership's spec, the Peers' spec, the MCS objects.
package agent
