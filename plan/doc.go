// Package plan turns a ClusterSet and the facts observed in its members into every
// member's desired objects and the ClusterSet status they imply.
//
// It is pure: no client, no clock, no randomness, no I/O. The same input always gives
// the same output, byte for byte once serialized. It owns:
//   - Parse: strict decoding of ClusterSet YAML (unknown fields are errors);
//   - Validate and Check: the field.ErrorList the webhook and the hub both run, and
//     the defaulted spec Compute starts from;
//   - globalnet IPAM: sticky allocation of global CIDRs, egress IPs and global IPs,
//     reading previous allocations back from what members hold;
//   - Compute: refuses two clusters the members show to be one (the same kube-system
//     UID); then Membership, Peers, GlobalIngresses, the Multi-Cluster Services objects
//     (ServiceExport, ServiceImport, EndpointSlice) and, with the ipsec cable, the
//     pre-shared key's Secret (its data left to the hub) for each member; and the
//     ClusterSet status they imply (all but what the hub observes while it writes).
//   - MemberDigest: a hash of all a member is to hold, computed without building its
//     objects, by which the hub skips members whose inputs did not change.
//
// It must not talk to an API server or a kernel; controllers/ and cmd/ do that.
package plan
