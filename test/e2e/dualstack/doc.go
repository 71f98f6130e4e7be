// Package dualstack holds the end-to-end tests of a lab whose clusters run both IP
// families underneath Strait: its own small lab (the basic ClusterSet, a gateway and a
// plain node a cluster), dual-stack, brought up once by TestMain.
package dualstack
