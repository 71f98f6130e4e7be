// Package members keeps the hub's connections to member clusters: one cached
// connection per (ClusterSet, cluster), keyed by the version of the kubeconfig it was
// built from, with informers on what the hub reads in the member and a health probe.
//
// A member that does not answer is a state (Connected false, with the error), reported
// through a callback when it changes; it is never retried in a tight loop. Each
// connection reads, once, which cluster it reaches (the UID of its kube-system
// namespace). It owns the connections, their informers and probe goroutines, and
// nothing else: it does not plan, write to members, or touch the hub.
package members
