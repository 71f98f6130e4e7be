// Package globalnet computes the active gateway's globalnet NAT as nftables sets and maps
// in the table "strait" — never a rule per address, so 10,000 mappings are 10,000 map
// elements written in one chunked transaction:
//
//   - egress: traffic from the cluster's own CIDRs to a remote global CIDR is SNATed to
//     one of the cluster's egress IPs (jhash of the source, so a pod keeps its address);
//     a pod of an exported headless service is SNATed to its own global IP instead;
//   - ingress: traffic from a remote global CIDR to a global IP is DNATed to the pod
//     (headless) or to one of the service's ready endpoints, picked by numgen from a
//     fixed number of slots per service. No Service externalIPs, no kube-proxy
//     involvement.
//
// The ingress DNAT runs before kube-proxy's (priority dstnat-10) and goes straight to
// endpoints, because a DNAT to the ClusterIP would keep kube-proxy from translating it
// again. It does no I/O.
package globalnet
