// Package flannelnft runs the shape checks (test/e2e/shapes) on two flannel clusters
// whose masquerade is in flannel's own nftables table (EnableNFTables), with kube-proxy
// in nftables mode.
package flannelnft
