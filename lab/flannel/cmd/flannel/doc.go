// Command flannel is the CNI plugin of the lab's flannel clusters. flannel's own plugin
// (github.com/flannel-io/cni-plugin) is not served by the Go module proxy; this one does
// what it does: ADD reads flanneld's subnet.env, builds the delegate configuration
// (lab/flannel.Delegate: the bridge plugin with host-local addresses from the node's
// subnet), saves it under dataDir/<container ID> and runs the delegate; DEL runs the
// delegate with the saved configuration, so a pod is torn down as it was set up even
// after flanneld rewrote subnet.env, and is a no-op for a container it never saw; CHECK
// runs the delegate's CHECK with the saved configuration and the runtime's prevResult.
package main
