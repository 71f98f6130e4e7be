// Package workload holds whereami, the lab's workload (the whereami image runs it from
// cmd/whereami): it answers every HTTP request, and every UDP datagram on the same port,
// with its cluster, node, namespace, pod and IP and the caller's address, and logs every
// request for kubectl logs. It never touches the network
// configuration of the pod it runs in.
package workload
