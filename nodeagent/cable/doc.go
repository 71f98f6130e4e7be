// Package cable defines the small interface every cable driver implements (wireguard,
// ipsec, vxlan in the sub-packages) and the types they share. The gateway drives one
// Driver; drivers own their device or daemon connections and nothing else: routes and
// NAT belong to the route agent and globalnet.
package cable
