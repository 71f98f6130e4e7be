// Package freeport finds loopback ports that nothing listens on, for tests and benchmarks
// that start a server on a port they must name in its flags before it binds.
//
// A port is free in TCP and in UDP at once when it is returned: a DNS server binds both
// with the same number, and a port picked by one protocol alone can be held by the other
// (an outgoing connection's ephemeral port, say). Nothing keeps another process from
// taking the port between this call and the server's bind; the window is short.
package freeport
