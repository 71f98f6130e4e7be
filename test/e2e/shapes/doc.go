// Package shapes holds the checks of Strait on clusters shaped like the ones users run
// rather than the lab's first shape: CNIs that masquerade pod traffic (kindnet's
// masquerade and real flanneld with --ip-masq, each in iptables' nat table or in an
// nftables table of its own) and kube-proxy in iptables mode, the members of one
// clusterset each shaped differently. It checks what a user checks across clusters (the
// caller's pod IP kept, to a pod and to a ClusterIP, from a gateway node and from a
// plain node, every cluster sending and receiving; the clusterset.local names, headless
// included), a bulk transfer through the cable with the CNI's MTU underneath (iperf3,
// against pod → pod in the cluster), a gateway crash failover bounded from the crash on
// every cluster, that the clusters' own networking is what it was (pod → pod and
// ClusterIP unmasqueraded, the internet masqueraded, NodePort), that the bypass survives
// the CNI and kube-proxy rewriting their rules, and, last, that the uninstall takes the
// bypass away and leaves the CNI's masquerade as it was.
//
// The package's test brings up one lab of three shapes and runs Suite on it: c1
// kindnet-masq in iptables and kube-proxy iptables (kind), c2 flannel in iptables and
// kube-proxy iptables (k3s), c3 flannel with its nftables masquerade and kube-proxy
// nftables, traffic checked around the ring c1 → c2 → c3 → c1 (main_test.go).
package shapes
