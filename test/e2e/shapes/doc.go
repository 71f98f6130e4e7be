// Package shapes holds the checks of Strait on clusters shaped like the ones users run
// rather than the lab's first shape: CNIs that masquerade pod traffic (kindnet's
// masquerade and real flanneld with --ip-masq, each in iptables' nat table or in an
// nftables table of its own) and kube-proxy in iptables mode, two members of one
// clusterset shaped differently. It checks what a user checks across clusters (the
// caller's pod IP kept, to a pod and to a ClusterIP, from a gateway node and from a
// plain node, both ways; clusterset.local names), that the clusters' own networking is
// what it was, and that the bypass survives the CNI and kube-proxy rewriting their rules.
//
// Each package below brings up one lab shape and runs Suite on it: kindflannel (c1
// kindnet-masq in iptables and kube-proxy iptables, c2 flannel in iptables and
// kube-proxy iptables), flannelnft (both flannel with nftables masquerade, kube-proxy
// nftables).
package shapes
