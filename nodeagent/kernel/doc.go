// Package kernel is the agent's seam to the Linux data plane: a thin Kernel interface
// over netlink (links, addresses, VXLAN FDB, routes, rules), sysctls and nftables, with
// a Linux implementation bound to one network namespace and an in-memory Fake for fast
// tests. Apply converges a Kernel to a desired State by diffing (add before delete,
// idempotent, deleting a missing thing is no error) and prunes everything marked as ours
// (Ownership) that the State no longer lists, also what a previous process left. Nothing
// not marked as ours is ever changed.
//
// It knows nothing about clusters, peers or gateways: the route, gateway and globalnet
// packages compute States; the agent package decides when to apply them.
package kernel
