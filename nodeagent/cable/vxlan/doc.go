// Package vxlan is the unencrypted cable driver: one VXLAN device, strait-vx0, that carries
// traffic gateway to gateway over the underlay.
//
// Every gateway gets a VTEP address derived from its advertised IPv4 address (the one
// remote gateways send to, behind a 1:1 NAT not the underlay address it binds)
// (243.b.c.d for a.b.c.d), so both ends agree on next hops without exchanging anything
// beyond what a Peer already says. The driver owns the device, its VTEP address, one
// all-zero FDB entry per remote gateway (head-end replication: ARP for a remote VTEP
// reaches every remote, only the owner answers) and the routes to every remote's CIDRs via
// that remote's VTEP, onlink, in Strait's table with Strait's route protocol. It never
// touches the route agent's vx-strait device, other routes, rules or NAT.
//
// The device listens on cable.Local.Port and sends from cable.Local.IP; when either
// changes, the device is recreated (VXLAN parameters cannot change in place). The cable's
// VNI is fixed and distinct from the route agent's and from Submariner's
// (whose VXLAN cable uses VNI 1000), so both can run side by side during a migration.
package vxlan
