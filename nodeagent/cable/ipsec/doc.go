// Package ipsec is the IPsec cable driver: strongSwan's charon, running beside the agent
// as a sidecar, driven through its VICI socket with govici — never by running swanctl or
// ipsec and parsing their text.
//
// The driver owns, in charon, the connections whose names start with "strait-" (one per
// remote cluster, identified by cluster IDs so a new gateway of the same cluster is the
// same peer) and the shared key "strait-psk"; on the node, the routes to remote CIDRs
// through libipsec's TUN device in Strait's table with Strait's route protocol, with the
// gateway's health-check address as source. It never touches other connections, keys or
// routes, and it does not run charon: Charon is the sidecar (`straitd charon`, and the
// tests) — its strongswan.conf, command and lifecycle.
//
// kernel-libipsec installs a route per child SA in charon's own table whatever
// install_routes says, and refuses a child SA unless the gateway owns an address inside
// every local traffic selector: the gateway must hold cable.Local.HealthCheckIP, the
// driver puts the last address of every other local CIDR (the service CIDRs) on ipsec0
// as a host address — the driver owns every address on ipsec0 — and the sidecar puts
// charon's table behind a rule consulted after Strait's, so Strait's table decides.
//
// On kernels without ESP (these machines) charon uses the kernel-libipsec plugin: ESP in
// userspace through a TUN device, always UDP-encapsulated. IKE and ESP then share one UDP
// port, cable.Local.Port, which is charon's NAT-T port (charon.port_nat_t); charon's plain
// IKE port is left to the kernel to choose.
//
// To avoid both ends initiating at once, the gateway of the cluster whose ID sorts first
// initiates and restarts; the other only responds.
package ipsec
