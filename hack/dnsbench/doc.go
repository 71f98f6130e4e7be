// Command dnsbench measures `straitd dns` against CoreDNS with dnsperf on loopback, in
// one run: a real API server (envtest) holds N imported services (each exported by
// three clusters: the local one not ready, two remote ones ready, so every answer is a
// round-robin pick), `straitd dns` serves them from it, and CoreDNS serves the same
// names from its hosts plugin and from its file plugin. The servers are measured in
// turns, several rounds, and the table is printed in Markdown.
//
// Run it through hack/dns-bench.sh (make bench-dns), which builds strait and CoreDNS
// first. It is a measuring tool only and has no runtime role.
package main
