// Package masquerade runs the NAT checks (test/e2e/nat) with c2's gateways behind its
// router's masquerade, which forwards nothing in (endpoint type Masquerade), and c1's
// behind a 1:1 NAT (ExternalIP): c2 must dial out and keep its mapping alive. Last, both
// clusters declared behind masquerade: the Peers say the cable cannot come up.
package masquerade
