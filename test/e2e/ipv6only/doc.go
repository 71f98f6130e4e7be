// Package ipv6only holds the end-to-end tests of a lab of two IPv6-only member clusters
// (examples/clusterset/ipv6only: pods, Services and nodes IPv6 alone, the WireGuard cable
// between the gateways' IPv6 WAN addresses), a gateway and a plain node a cluster, brought
// up once by TestMain. It checks what a user of such clusters checks: the cables up, pod
// to remote pod, ClusterIP and clusterset names across them over IPv6 with the caller's
// address kept.
package ipv6only
