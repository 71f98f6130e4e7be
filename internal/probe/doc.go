// Package probe is `straitd probe`: what `strait diagnose`, `verify` and `benchmark` run
// inside a member, from Strait's own image, so that a real cluster needs no other image.
// A probe pod serves (Serve: over TCP, the source address each connection arrived from;
// over UDP, an answer to every datagram; ServeBench: the benchmarks) and, exec'd there,
// dials the probe pod of another cluster (Dial, PathMTU, Watching for a failover's gap,
// MeasureThroughput, MeasureLatency) or looks a name up with the pod's resolver; run in
// the agent's container (host network), Node reads the node's facts a diagnosis needs
// (kube-proxy's mode and masquerade bit from its own metrics endpoint, the links' MTUs,
// whether Strait's nftables chains are there, the fences' ports and the rules of the
// ip, ip6 and inet tables that drop given UDP ports) and Flows the node's conntrack
// entries, IPv4 and IPv6, towards given addresses. Every probe works in the family of
// the address it is given: PathMTU with that family's headers, LookupRecords asks for
// A and AAAA apart and tells NOERROR with no answer from NXDOMAIN.
//
// Each probe gives up by its own timeouts (--timeout), so that an exec of it ends: the
// caller bounds the rest (cmd/strait/diagnose's deadlines). Everything it prints is one
// JSON object, which the caller reads back. It changes nothing on the node and in the
// cluster.
package probe
