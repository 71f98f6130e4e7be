// Package drivers builds the cable driver a ClusterSet names (wireguard, ipsec, vxlan)
// from what the gateway has at hand. It is the only package that imports every driver;
// it owns nothing on the node itself. Cleanup removes every driver's leftovers (for
// `straitd agent --cleanup`), since only this package knows them all.
package drivers
