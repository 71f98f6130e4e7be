package main

import (
	"strings"
	"testing"
)

func TestParseDNSPerf(t *testing.T) {
	out := `[Status] Sending queries (to 127.0.0.1:5353)
> NOERROR svc-1.ns-0.svc.clusterset.local A 0.000300
> NOERROR svc-2.ns-0.svc.clusterset.local A 0.000100
> NOERROR svc-3.ns-0.svc.clusterset.local A 0.002000
> NOERROR svc-4.ns-0.svc.clusterset.local A 0.000200
Statistics:

  Queries sent:         4
  Queries completed:    4 (100.00%)
  Queries lost:         0 (0.00%)

  Response codes:       NOERROR 4 (100.00%)
  Queries per second:   9999.5
  Average Latency (s):  0.000650 (min 0.000100, max 0.002000)
  Latency StdDev (s):   0.000800
`
	r, err := parseDNSPerf(out, true)
	if err != nil {
		t.Fatal(err)
	}
	if r.qps != 9999.5 || r.avgMs != 0.65 || r.sdMs != 0.8 || r.p50Ms != 0.2 || r.p99Ms != 2 {
		t.Errorf("got %+v", r)
	}
	if _, err := parseDNSPerf(strings.Replace(out, "NOERROR 4 (100.00%)", "NOERROR 3 (75.00%), NXDOMAIN 1 (25.00%)", 1), true); err == nil {
		t.Error("an NXDOMAIN answer was taken")
	}
}

func TestMemoryTable(t *testing.T) {
	mi, err := parseStatus("Name:\tstraitd\nVmHWM:\t   81920 kB\nVmRSS:\t   61440 kB\nRssAnon:\t   20480 kB\nRssFile:\t   40960 kB\n")
	if err != nil || mi != (memInfo{rss: 61440, hwm: 81920, anon: 20480, file: 40960}) {
		t.Fatalf("parsed %+v, %v", mi, err)
	}
	hosts := memInfo{rss: 65536, hwm: 65536, anon: 16384, file: 49152}
	got := memoryTable([]string{"strait dns", "CoreDNS hosts", "CoreDNS file"}, []*memInfo{&mi, &hosts, nil},
		"# HELP x\ngo_memstats_heap_inuse_bytes 1.2e+07\ngo_goroutines 12\n")
	for _, want := range []string{
		"| strait dns | 60.0 | 80.0 | 20.0 | 40.0 | 1.00 | 1.00 | 1.00 |",
		"| CoreDNS hosts | 64.0 | 64.0 | 16.0 | 48.0 | 0.94 | 1.25 | 1.25 |",
		"| CoreDNS file | ? |",
		"≤ 1.00 — **0.94, met**",
		"go_memstats_heap_inuse_bytes 1.2e+07\n```",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "go_goroutines") {
		t.Error("metrics beyond memory copied")
	}
}

func TestBenchLineIsWhatBenchtableReads(t *testing.T) {
	names := []string{"strait dns", "CoreDNS hosts", "CoreDNS file"}
	results := map[string]map[string][]result{
		"throughput": {
			"strait dns":    {{qps: 150}, {qps: 140}, {qps: 160}},
			"CoreDNS hosts": {{qps: 100}, {qps: 100}, {qps: 100}},
		},
		"latency": {
			"strait dns":    {{avgMs: 0.1, p99Ms: 0.2}, {avgMs: 0.1, p99Ms: 0.3}, {avgMs: 0.1, p99Ms: 0.25}},
			"CoreDNS hosts": {{avgMs: 0.2, p99Ms: 0.4}, {avgMs: 0.1, p99Ms: 0.3}, {avgMs: 0.2, p99Ms: 0.5}},
		},
	}
	mem := []*memInfo{{rss: 50 * 1024, anon: 18 * 1024}, {rss: 100 * 1024}, nil}
	got := benchLine(names, results, mem)
	want := "BenchmarkDNSAgainstCoreDNSHosts 1 1.5 qps-ratio 0.5 rss-ratio 0.5 avg-latency-ratio 0.5 p99-latency-ratio 0.25 p99-ms 18 anon-MiB\n"
	if got != want {
		t.Errorf("benchLine:\n got %q\nwant %q", got, want)
	}
	if got := benchLine([]string{"strait dns"}, results, mem[:1]); got != "" {
		t.Errorf("without CoreDNS hosts: %q, want nothing", got)
	}
}
