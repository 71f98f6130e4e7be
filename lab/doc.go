// Package lab brings whole clustersets up on one machine, as root, without containers:
// every cluster's control plane, nodes and pods are Linux network namespaces, the
// Kubernetes control-plane binaries run as processes, a lab kubelet turns Pods into
// namespaces with built-in workloads, and a forwarder puts every API server on the host's
// loopback.
//
// It owns everything named with the "sl-" prefix (namespaces, links inside them,
// /etc/netns/sl-*) and its state directory (default /run/strait-lab). It must not touch
// any other namespace, link, process or file: "lab down" removes exactly what carries the
// prefix or is listed in the state directory, also after a crash of "lab up".
//
// Strait's own daemons run from the straitd binary (Options.Straitd), the one the image
// ships; the lab daemon and the pods' workloads from the people's strait binary
// (Options.Strait). Nothing here is imported by straitd: the lab is development
// infrastructure, not product.
//
// Subpackages: labcmd (the `strait lab` command), topology (pure: spec → namespaces,
// links, addresses, routes), netns (plumbing through ip(8)), kubelet (the lab kubelet),
// forward (the loopback TCP forwarder), workload (whereami and friends). The control
// planes' certificates come from internal/pki.
package lab
