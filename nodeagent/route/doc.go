// Package route computes the route agent's desired kernel state on every node, as pure
// functions: the vx-strait VXLAN device towards the active gateway (VNI and port
// distinct from Submariner's 100/4800 so both run side by side during a migration), its
// FDB entries, remote CIDRs routed through it in Strait's own table with Strait's rule
// priority and route protocol, route MTU from the underlay minus overhead, TCP MSS
// clamped to that route MTU for remote traffic in the nftables table "strait", and
// rp_filter loose on vx-strait (traffic from nodes arrives there but returns through the
// cluster network) and, on nodes other than the active gateway, on the underlay device
// (replies arrive there while the route back is vx-strait). Per address family: vx-strait
// carries IPv4 and IPv6 over an IPv4 or IPv6 underlay, and each family with remote CIDRs
// gets its VTEP address, neighbor, routes, rule and table (ip strait, ip6 strait).
//
// It also names everything that is ours on a node (Ownership). It does no I/O.
package route
