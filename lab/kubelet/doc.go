// Package kubelet is the lab kubelet: for one node it registers the Node, keeps its Lease
// and status fresh so nothing is evicted, and turns the Pods scheduled to it into network
// namespaces (a veth to the node, an address from the node's pod CIDR, resolv.conf
// pointing at the cluster DNS) running a built-in workload, then reports Pod status so
// EndpointSlices fill. It touches only the node's namespace and the pod namespaces it
// makes (named topology.PodNamespace), and only through the API as the node.
package kubelet
