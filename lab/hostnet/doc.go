// Package hostnet is the lab's one touch of the host's own network namespace. It reads
// the host's routes (every table), addresses and resolvers, so that "lab up" picks its
// ranges clear of them (topology.ChooseNetworks), and it makes and removes the lab's one
// link there: a veth into the lab's internet namespace with routes for exactly the lab's
// ranges (topology.HostLink), so a client on the host given a lab address reaches the lab
// instead of sending it out through the host's default route.
//
// It must not touch any other link, route, address or setting of the host: it changes
// only the link named topology.HostLinkName and the routes on it, and reading excludes
// that link, so a running lab never sees its own routes as the host's.
package hostnet
