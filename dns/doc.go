// Package dns is the home of `straitd dns`, the member's clusterset.local DNS server
// (docs/architecture.md). It holds no code itself; the work is split by concern:
//
//   - resolver: pure. An immutable Snapshot of the imported services and which clusters
//     are connected, and the answers to DNS questions over it. No I/O, no clock.
//   - server: the miekg/dns handler and UDP/TCP listeners, EDNS0 and truncation, and
//     the Prometheus metrics. It reads the current Snapshot and never builds one.
//   - source: watches on the member's ServiceImports, MCS EndpointSlices, Peers and
//     Membership, kept as compact records in a store that holds the snapshot's entries;
//     it builds a new Snapshot on every change and swaps it in atomically.
//   - corefile: the marked stanza in kube-system/coredns that forwards the zones to
//     strait dns (a pure text edit, the ConfigMap read-modify-write around it, and the
//     Keeper loop that puts it back).
//   - clustersetip: copies the cluster IP of each ClusterSetIP import's derived Service
//     (the hub writes it, the member's API server allocates its IP) into the import's
//     spec.ips, under its own field manager.
//   - prints: the member's count and fingerprint sum of the objects the hub wrote into
//     it, per ClusterSet and kind, kept from metadata-only watches (the Peers' whole)
//     and written into the Membership's status.prints, under its own field manager, for
//     the hub to compare with its record of its writes; with them, status.connections,
//     the summary of the Peers' connections, for the ClusterSet's status.
//   - dnscmd: the `straitd dns` command, which puts the others together.
//
// None of these packages touches the kernel. The MCS objects belong to the hub, but for
// one field: clustersetip writes spec.ips of ServiceImports, and nothing else. Of the
// Membership, strait dns writes its own entry of status.daemons, status.prints and
// status.connections.
package dns
