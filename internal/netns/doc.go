// Package netns is the one network-namespace helper of the project, for the lab and the
// tests alike. It is product code, not test support: the lab ships inside the strait
// binary, which links nothing under test/.
//
// Named namespaces by name (named.go, exec.go): namespaces, veths, bridges, addresses and
// routes made through ip(8), so they show up in `ip netns` and get the per-namespace
// /etc/netns/<ns>/resolv.conf; processes started inside a namespace and sockets dialled
// inside one. The lab builds on these; they only delete namespaces the caller names and
// only kill processes inside those namespaces or the pids the caller gives.
//
// Namespaces of one test (ns.go, traffic.go): New creates a namespace named
// "st<random>-<name>" and removes it when the test ends, also when it fails; NS adds
// veths, bridges, addresses, routes, ICMP and TCP from inside it. These take a TB, which
// *testing.T and *testing.B satisfy, so that the lab does not link package testing.
//
// Every namespace is created after PrepareRunDir (rundir.go). Nothing here touches the
// host's own network.
package netns
