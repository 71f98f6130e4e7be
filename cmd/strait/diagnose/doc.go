// Package diagnose is `strait diagnose`: it looks for what breaks traffic between the
// members of a clusterset, with the person's own credentials for each member (contexts
// of a kubeconfig, or a kubeconfig file per member), and prints one pass/warn/fail line
// per check and member, and for each failure what to do.
//
// It reads the members' objects (nodes, Strait's Membership, Peers and Gateways, the
// agent DaemonSet and strait dns Deployment, CoreDNS's Corefile, the ServiceCIDR API),
// reads each node's facts by exec in the agent's container (`straitd probe node`), and
// starts probe pods of Strait's own image on every node (`straitd probe serve`), from
// which it dials the other members' probe pods: the source address that arrives tells a
// masquerading CNI, a don't-fragment datagram tells the path MTU, and a lookup tells
// whether clusterset.local is answered. It removes its probe pods before it returns.
//
// The judging (checks.go) is pure: it takes what was read and returns the results; the
// reading (members.go, probes.go) holds the clients. It writes nothing but its pods.
//
// `strait gather` (gather.go) reaches the clusters the same way and writes a tarball of
// what support needs: objects, events, logs, each agent's kernel dump (`straitd agent
// --dump`, exec'd), the Corefile, versions; of Secrets only their names and keys.
package diagnose
