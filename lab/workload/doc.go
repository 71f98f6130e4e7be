// Package workload holds the lab's built-in pod workloads and how a Pod selects one: an
// HTTP whereami that answers with its cluster, node, pod and IP and the caller's address;
// iperf3; and an idle client that runs nothing (lab exec enters its namespace). It never
// touches the network configuration of the namespace it runs in.
package workload
