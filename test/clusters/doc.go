// Package clusters starts real control planes for tests: one hub and any number of member
// kube-apiservers (each with its own etcd) in the test process, through
// controller-runtime's envtest. Every cluster gets Strait's CRDs (members also the
// Multi-Cluster Services CRDs), and each member's kubeconfig is stored as a Secret in the
// hub, the way an operator registers a member.
//
// It owns the processes and temporary directories it starts and nothing else; it never
// talks to a cluster it did not start. The binaries come from KUBEBUILDER_ASSETS, else
// from bin/k8s/<version> in the repository (make k8s-binaries builds them).
package clusters
