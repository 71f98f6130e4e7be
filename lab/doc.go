// Package lab brings whole clustersets up on one machine, as root, without Docker:
// every cluster's control plane is a network namespace with the Kubernetes control-plane
// binaries running as processes, every node (and one for the hub) is a real node
// (kubelet, containerd, runc; lab/node) in a network namespace of its own, the sample
// workloads run from locally built images (lab/image), and a forwarder puts every API
// server on the host's loopback.
//
// It owns everything named with the "sl-" prefix (namespaces, links inside them, the
// host's one link into the lab, /etc/netns/sl-*), its state directory (default
// /run/strait-lab), the real nodes' state under it included, and the real nodes'
// cgroups ("strait-node-<id>", recorded there; lab/node). It must not touch any other
// namespace, link, process, cgroup or file: "lab down" removes exactly what carries the
// prefix or is listed in the state directory, also after a crash of "lab up".
//
// Strait's own daemons run from the straitd binary (Options.Straitd), the one the image
// ships; the lab daemon from the people's strait binary (Options.Strait). The lab ships
// in that people's binary (`strait lab`) and never in the image: nothing here is
// imported by straitd (cmd/straitd's deps_test.go).
//
// Subpackages: topology (pure: spec → namespaces, links, addresses, routes), node (a
// real node), image (the nodes' images), forward (the loopback TCP forwarder), workload
// (whereami, the image's program). The `strait lab` command is cmd/strait/lab; the
// network namespaces are internal/netns's; the control planes' certificates come from
// internal/pki.
package lab
