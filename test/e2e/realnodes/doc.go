// Package realnodes tests the lab on real nodes (kubelet, containerd, runc in every
// node's network namespace): nodes Ready, the sample workloads running from the local
// images, and kubectl exec, kubectl logs and strait lab exec against them, across
// clusters through Strait. It brings up its own lab, so it shares none.
package realnodes
