// Package agent wires `straitd agent`: it watches the Membership, Peers, Nodes, the
// gateway Lease and (on the active gateway under globalnet) GlobalIngresses and
// EndpointSlices, builds a Snapshot of them, computes the node's whole desired data
// plane from it (Compute, pure) and converges the kernel and the cable to it
// (Dataplane). It runs the gateway election on gateway-capable nodes, publishes the
// node's Gateway object and, on the active gateway, health-checks every Peer into its
// status. Triggers: watch events, netlink events, the election, and a periodic full
// resync.
//
// It writes only Gateway objects and Peer status; it never writes what the hub owns.
package agent
