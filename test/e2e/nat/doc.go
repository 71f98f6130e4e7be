// Package nat runs the checks of gateways behind NAT (issue 26) on a lab whose routers
// do the NAT (lab file gatewayNAT), with the ClusterSet alone telling Strait how the
// gateways are reached: onetoone puts c2's gateways behind a 1:1 NAT (the cloud case),
// masquerade puts them behind a masquerade that forwards nothing in, with c1 behind a
// 1:1 NAT. Each package brings up one lab and switches the cable driver in it.
package nat
