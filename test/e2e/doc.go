// Package e2e holds the end-to-end tests of Strait on one shared lab (the seed
// documents' two clusters c1 and c2, in both IP families: examples/clusterset/dualstack,
// the basic clusterset with IPv6 ranges too, on dual-stack clusters): the lab itself
// (control planes, kube-proxy, CoreDNS, kubeconfigs on loopback, up being idempotent and
// down cleaning up after a crash; every node a real node: kubectl exec, logs and
// port-forward, a node's kubelet or containerd killed and brought back by up again),
// then Strait across the clusters — every cable driver, both families,
// the clusterset.local names, failover, ClusterSet changes and a refused ClusterSet.
//
// The lab is brought up once in TestMain; tests run one after another and each puts
// back what it changes. Root only; under CI=true a missing prerequisite fails.
package e2e
