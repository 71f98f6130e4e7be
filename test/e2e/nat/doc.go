// Package nat runs the checks of gateways behind NAT (issue 26) on one lab whose routers
// do the NAT (lab file gatewayNAT), with the ClusterSet alone telling Strait how the
// gateways are reached: c2's gateways behind a 1:1 NAT (the cloud case), reached from
// c1, and c3's behind a masquerade that forwards nothing in, reached from c2. The cable
// driver is switched in the lab: wireguard and ipsec through both NATs, vxlan through
// the 1:1 NAT with c3 out of the ClusterSet (the webhook refuses vxlan behind
// masquerade), the ways the ClusterSet can say c2 is reached, and c2 declared behind
// masquerade too.
package nat
