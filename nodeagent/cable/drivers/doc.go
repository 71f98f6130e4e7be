// Package drivers builds the cable driver a ClusterSet names (wireguard, ipsec, vxlan)
// from what the gateway has at hand. It is the only package that imports every driver;
// it owns nothing on the node itself.
package drivers
