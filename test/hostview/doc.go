// Package hostview takes a view of what the lab and its real nodes must leave on the host
// as they found it: the host-wide sysctls a kubelet would set, the top of host
// directories (/var/lib, /var/log, /run), the fixed paths containerd and the kubelet
// write to, and the nodes' cgroups. Tests take one before and one after and compare. It
// only reads.
package hostview
