// Package threeclusters holds the end-to-end tests that need a third cluster: a
// consumer (c3) of a service that two other clusters (c1, c2) export, where neither
// export is local. Connections to the clusterset IP spread over both clusters' pods
// (TCP and UDP, session affinity kept), a cluster leaving the export drops out of the
// derived slices, and spec.dns.serviceAnswer LocalFirst still answers one cluster.
package threeclusters
