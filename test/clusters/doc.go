// Package clusters is the one control-plane starter of the tests: real kube-apiservers,
// each with its own etcd, in the test process through controller-runtime's envtest, every
// one with Strait's and the Multi-Cluster Services CRDs.
//
// Start starts a hub and any number of members and stores each member's kubeconfig as a
// Secret in the hub, the way an operator registers a member. StartCluster starts a single
// one; NewCluster (one test) and TestMain (one package) wrap it with the rule every test
// follows: without the binaries skip, unless CI is set, then fail. Cut severs the
// clients made from a config from their API server, as a crash or a partition would.
//
// It owns the processes and temporary directories it starts and nothing else; it never
// talks to a cluster it did not start. The binaries come from KUBEBUILDER_ASSETS, else
// from bin/k8s/<k8sversion.Version> in the repository (make k8s-binaries builds them).
package clusters
