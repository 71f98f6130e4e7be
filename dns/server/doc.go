// Package server is the thin miekg/dns front of `straitd dns`: UDP and TCP listeners, the
// handler that turns a message into one resolver.Resolve call, EDNS0 buffer sizes,
// truncation with TC so clients retry over TCP, and the Prometheus metrics.
//
// It reads the current resolver.Snapshot and never builds one (package source does), and
// it holds no DNS knowledge of its own beyond the message envelope.
package server
