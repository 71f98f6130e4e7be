// Package memberprint fingerprints the objects a hub writes into a member cluster, for
// both sides of one comparison: the hub keeps the fingerprint of each of its writes as
// the member answered it, summed per kind, and a member sums the same fingerprints over
// what it holds. Equal counts and sums say the member holds exactly what the hub wrote
// (but for a 64-bit collision), without the hub holding or listing the objects.
//
// For the kinds the hub does not watch (Reported: ServiceImports, the Services and
// EndpointSlices derived from them, and Peers) strait dns keeps the member's side and
// writes it to the Membership's status.prints; the hub reads it there (FromStatus).
//
// It is pure: hashes of names, versions, digests, managers, labels and annotations; no
// I/O.
package memberprint
