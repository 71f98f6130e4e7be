// Package server is the front of `straitd dns`: UDP and TCP listeners, the handler that
// turns a message into one resolver.Resolve call, EDNS0 buffer sizes, truncation with TC
// so clients retry over TCP, and the Prometheus metrics. Messages are miekg/dns's; TCP is
// served by miekg/dns's server, UDP by a loop of this package that reads and writes
// datagrams in batches (udp.go).
//
// It reads the current resolver.Snapshot and never builds one (package source does), and
// it holds no DNS knowledge of its own beyond the message envelope.
package server
