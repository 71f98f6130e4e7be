// Package show is `strait show` and `strait version`: what the clusterset is doing,
// per member, read with the hub's kubeconfig alone. The ClusterSet (and status.hub, the
// hub's build) comes from the hub; each member is read with the kubeconfig Secret the
// ClusterSet names there, the hub's own member credentials, so it reads nothing the hub
// may not already read (Membership, Peers, Gateways in strait-system, ServiceExports):
// connections, gateways, endpoints, networks, exports and every daemon's build
// (Membership status.daemons, internal/daemonbuild).
//
// Reading (read.go) is apart from the views (views.go: rows and findings, pure) and
// their printing (print.go). It writes nothing anywhere.
package show
