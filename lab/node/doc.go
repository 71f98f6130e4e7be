// Package node runs one real Kubernetes node of the lab: containerd (with runc and the
// CNI bridge and host-local plugins) and the kubelet, inside a network namespace the
// caller created and a mount namespace of the node's own. That mount namespace puts a
// tmpfs over /run, /var/lib and /var/log (the shared paths containerd and the kubelet
// write to) with the node's state and binaries bound back, and files holding the host's
// current values over the sysctls the kubelet would set host-wide (vm.overcommit_memory,
// kernel.panic, kernel.panic_on_oops, ...), so nothing of a node reaches the host.
// Every process of a node (daemons, shims, containers) lives under one cgroup of the
// node's in every hierarchy.
//
// It owns the node's state directory, its mount namespace, its cgroups ("strait-node-<id>"
// in every hierarchy) and the bridge its CNI config names. Teardown removes all of them
// from what is on disk, also after a crash; it must not touch the network namespace
// itself (the caller's) or anything outside the state directory.
package node
