// Package globalnet holds the end-to-end tests of the globalnet example on one shared lab:
// clusters g1 and g2 with identical pod and service CIDRs, reaching each other's exported
// services through global IPs (the seed documents' overlapping-CIDR scenario). g1's CNI
// masquerades pod traffic to anything outside its pod CIDR, with kube-proxy in iptables
// mode, as kind's does, g2's the same in an nftables table: global egress IPs must still
// be what the other cluster sees.
package globalnet
