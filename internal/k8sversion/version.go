package k8sversion

// Version is the Kubernetes release of bin/k8s; test/k8sbin/go.mod requires the same
// k8s.io/kubernetes (TestGoModAgrees).
const Version = "v1.37.1"
