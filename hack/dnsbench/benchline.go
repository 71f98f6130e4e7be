package main

import (
	"fmt"
	"strings"
)

// benchLine is the run's figures against CoreDNS hosts as one line in `go test -bench`'s
// format, so that hack/benchtable puts issue 17's DNS targets in the same table as the
// other benchmarks (make bench appends it to docs/bench/bench.txt; make bench-gate holds
// floors on it):
//
//	BenchmarkDNSAgainstCoreDNSHosts 1 <qps> qps-ratio <rss> rss-ratio <avg> avg-latency-ratio <p99> p99-latency-ratio <ms> p99-ms <MiB> anon-MiB
//
// The ratios are strait dns ÷ CoreDNS hosts: QPS and resident memory (VmRSS), and, at
// the fixed offered load, the average and p99 latency (medians of the per-round ratios);
// p99-ms is strait dns's own median p99 there; anon-MiB is strait dns's RssAnon, its own
// memory, which unlike VmRSS does not move with how much of either binary the page cache
// holds (make bench-gate holds a floor on it). A figure the run did not measure is left
// out. Empty when there is no CoreDNS hosts server.
func benchLine(names []string, results map[string]map[string][]result, mem []*memInfo) string {
	hosts := -1
	for i, n := range names {
		if n == "CoreDNS hosts" {
			hosts = i
		}
	}
	if hosts < 0 {
		return ""
	}
	strait, core := names[0], names[hosts]
	ratios := func(mode string, f func(result) float64) []float64 {
		a, b := results[mode][strait], results[mode][core]
		var v []float64
		for i := range min(len(a), len(b)) {
			if f(b[i]) > 0 {
				v = append(v, f(a[i])/f(b[i]))
			}
		}
		return v
	}
	var b strings.Builder
	b.WriteString("BenchmarkDNSAgainstCoreDNSHosts 1")
	add := func(v float64, unit string) { fmt.Fprintf(&b, " %.4g %s", v, unit) }
	if v := ratios("throughput", func(r result) float64 { return r.qps }); len(v) > 0 {
		add(median(v), "qps-ratio")
	}
	if mem[0] != nil && mem[hosts] != nil {
		add(float64(mem[0].rss)/float64(mem[hosts].rss), "rss-ratio")
	}
	if v := ratios("latency", func(r result) float64 { return r.avgMs }); len(v) > 0 {
		add(median(v), "avg-latency-ratio")
	}
	if v := ratios("latency", func(r result) float64 { return r.p99Ms }); len(v) > 0 {
		add(median(v), "p99-latency-ratio")
	}
	var p99 []float64
	for _, r := range results["latency"][strait] {
		p99 = append(p99, r.p99Ms)
	}
	if len(p99) > 0 {
		add(median(p99), "p99-ms")
	}
	if mem[0] != nil && mem[0].anon > 0 {
		add(float64(mem[0].anon)/1024, "anon-MiB")
	}
	return b.String() + "\n"
}
