// Package probe is `straitd probe`: what `strait diagnose` runs inside a member, from
// Strait's own image, so that a real cluster needs no other image. A probe pod serves
// (Serve: over TCP, the source address each connection arrived from; over UDP, an answer
// to every datagram) and dials the probe pod of another cluster (Dial, PathMTU) or looks
// a name up with the pod's resolver; run in the agent's container (host network), Node
// reads the node's facts a diagnosis needs: kube-proxy's mode and masquerade bit from its
// own metrics endpoint, the links' MTUs, and whether Strait's nftables chains are there.
//
// Everything it prints is one JSON object, which strait diagnose reads back. It changes
// nothing on the node and in the cluster.
package probe
