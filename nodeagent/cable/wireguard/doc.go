// Package wireguard is the WireGuard cable driver: one device, strait-wg, with one peer
// per remote cluster's active gateway, configured through wgctrl. Where the kernel has
// WireGuard the device is a kernel link that outlives the agent; elsewhere the driver runs
// an embedded wireguard-go device (a TUN plus a UAPI socket, so wgctrl and `wg show` see
// it) that lives as long as the Driver.
//
// Every gateway of a cluster uses the same key pair, kept in the Secret
// strait-system/strait-wireguard-key of the member (LoadOrCreateKey makes it when
// missing); only the public key is published, so after a failover remote peers simply see
// the same peer roam to the new gateway's address.
//
// The driver owns strait-wg, its peers and the routes to every remote's CIDRs through
// strait-wg in Strait's table with Strait's route protocol, and touches nothing else on
// the node; in the member's API it reads and, when missing, creates the key Secret
// (LoadOrCreateKey), nothing else.
package wireguard
