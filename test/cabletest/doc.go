// Package cabletest runs a cable driver for real, for the drivers' own tests: a lab of
// network namespaces (a WAN, two gateways, a pod behind each), a gateway agent per gateway
// as a child process living wholly inside its namespace (wireguard-go needs that), real
// ICMP and TCP through the cable, and a check that nothing is left behind. It is imported
// only from _test files; it owns the namespaces, links and processes it creates, nothing
// else.
package cabletest
