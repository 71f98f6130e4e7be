// Command dnsbench measures `straitd dns` against CoreDNS with dnsperf on loopback, in
// one run: a real API server (envtest) holds N imported services (each exported by
// three clusters: the local one not ready, two remote ones ready, so every answer is a
// round-robin pick), `straitd dns` serves them from it, and CoreDNS serves the same
// names from its hosts plugin and from its file plugin. The servers are measured in
// turns, several rounds, and the tables are printed in Markdown: throughput, latency at
// a fixed offered load (average, p50 and p99 of every answer), and each server's memory
// after the runs (VmRSS, VmHWM, RssAnon, RssFile) with the ratio of strait dns's resident
// memory to CoreDNS hosts' against its target (≤ 1.0).
//
// Run it through hack/dns-bench.sh (make bench-dns), which builds strait and CoreDNS
// first. It is a measuring tool only and has no runtime role.
package main
