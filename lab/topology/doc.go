// Package topology computes a lab's network from a ClusterSet and a lab spec: every
// network namespace, veth, address and route. It is pure: no I/O, no clock, no
// randomness, so the same inputs always give the same lab, and "lab down" can find
// everything by its "sl-" prefix.
//
// Addresses come only from ranges the lab owns: the clusters' own pod and service CIDRs,
// 192.0.2.0/24 for the shared WAN, and 10.250.0.0/16 for per-cluster LANs.
package topology
