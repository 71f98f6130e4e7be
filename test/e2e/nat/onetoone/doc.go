// Package onetoone runs the NAT checks (test/e2e/nat) with c2's gateways behind its
// router's 1:1 NAT: LAN addresses only, a public address per gateway on the router, the
// Nodes' ExternalIP, and the ClusterSet's endpoint type ExternalIP for c2.
package onetoone
