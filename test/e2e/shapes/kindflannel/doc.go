// Package kindflannel runs the shape checks (test/e2e/shapes) on c1 shaped as kind
// (kindnet's masquerade in iptables, kube-proxy iptables) and c2 as k3s (flannel VXLAN
// with --ip-masq in iptables, kube-proxy iptables).
package kindflannel
