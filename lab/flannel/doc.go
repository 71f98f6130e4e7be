// Package flannel is the lab's flannel shape: the pinned flannel release (Version), the
// upstream DaemonSet patched for the lab's nodes (Manifest), the flanneld image
// (ImageSpec), and what the lab's own `flannel` CNI plugin computes from flanneld's
// subnet.env (ParseSubnetEnv, Delegate). flannel's own CNI plugin module is not served
// by the Go module proxy; cmd/flannel does what it does: it reads subnet.env and hands
// the pod to the bridge plugin with host-local addresses from the node's subnet.
//
// Everything here is pure: the plugin binary does the file and exec work, the lab
// applies the manifest, hack/flannelimage writes the image. It must not touch kernel
// state or a cluster.
package flannel
