// Package topology computes a lab's network from a ClusterSet and a lab spec: every
// network namespace, veth, address and route. It is pure: no I/O, no clock, no
// randomness, so the same inputs always give the same lab, and "lab down" can find
// everything by its "sl-" prefix.
//
// Addresses come only from ranges the lab owns: the clusters' own pod and service CIDRs
// and the lab's Networks (a LAN range for the per-cluster LANs and the hub, the WAN
// between the routers and gateways, an internet range), each the first of a few
// candidates clear of the ClusterSet and of the host's own routes, addresses and
// resolvers (ChooseNetworks; the host is read by lab/hostnet). Every member has a router
// between its LAN and the WAN; a namespace on the WAN stands for the internet, and the
// host's one link into the lab ends there (wayout.go).
package topology
