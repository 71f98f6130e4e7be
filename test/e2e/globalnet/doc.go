// Package globalnet holds the end-to-end tests of the globalnet example on one shared lab:
// clusters g1 and g2 with identical pod and service CIDRs, reaching each other's exported
// services through global IPs (the seed documents' overlapping-CIDR scenario).
package globalnet
