// Package cable defines the small interface every cable driver implements (wireguard,
// ipsec, vxlan in the sub-packages) and the types they share. The gateway drives one
// Driver; drivers own their device or daemon connections and the routes to remote CIDRs
// through that device (see Routing), nothing else: other routes, the policy rule and NAT
// belong to the route agent and globalnet. Package drivers builds a Driver by name.
package cable
