// Command whereami is the lab's HTTP workload as a container: it answers every request
// with who it is (cluster, node, namespace, pod, pod IP, from the flags or the
// environment the Pod's downward API sets) and the caller's address as it saw it.
package main
