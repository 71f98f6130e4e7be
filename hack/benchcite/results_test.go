package benchcite

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// run is a kept output in small: the header bench-header.sh writes, benchmark lines (one
// whose values a log line pushed to the next line), a --- BENCH: block (with a line a
// helper of the test logged from a file that is not a _test.go), a lab's noise, the
// targets' table and one of dns-bench.sh's, a b.Logf figure kept as a comment and a Prometheus sample.
const run = `# command: make bench-lab
# commit: 1948160f3496ad9add8e9710161c930a43f65e7b
# date: 2026-11-18T09:29:36Z
# nproc: 2
# load average: 21.16 15.82 11.45
lab up: /tmp/gates-bench-run/examples/clusterset/basic/clusterset.yaml
  c1: API server ready (3.9s)
  ready in 42.1s
BenchmarkResolve-2   	 7116612	       168.8 ns/op	      80 B/op	       1 allocs/op
BenchmarkAnswer-2     	 3495920	       340.9 ns/op	     248 B/op	       3 allocs/op
BenchmarkExportToImport-2   	{"level":"error","ts":"2026-11-26T15:43:36Z","msg":"Reconciler error"}
       1	       760.5 max-ms	       338.1 min-ms
BenchmarkGatewayFailover-2   	       18	27131755197 ns/op	      1106 ms-gap-crash	       327.0 ms-gap-graceful
--- BENCH: BenchmarkGatewayFailover-2
    failover_test.go:290: round 1, c2's active gateway agent got killed: longest time without an answer 1.109s
    failover_test.go:290: round 1, c2's active gateway agent got terminated: longest time without an answer 163ms
    suite.go:97: round 2, from a helper of the test in a file of its own: longest time without an answer 1.2s
ok  	github.com/straitnet/strait/test/e2e	525.189s
| What | Figure | Target | Figure / target | Met |
|---|---|---|---|---|
| Gateway failover gap after a crash, ms (lab) | 1106 | ≤ 2000 | 0.55 | yes |
#     runtime.GC: 8.872 cpu-s
| server | queries/s | rounds strait dns had the lower latency |
|---|---:|---:|
| CoreDNS hosts | 93,868 | 1/3, 3/3 |
go_gc_duration_seconds_count 387
rc 0
`

// TestResultsAreWhatTheRunReported: every benchmark value, logged measurement, table
// cell of figures and keyed figure is read with what names it, and nothing else is: not
// the header's date, commit or load average, an iteration count, the lab's timings, a
// test's line number or a package's run time.
func TestResultsAreWhatTheRunReported(t *testing.T) {
	var got []string
	for _, r := range ResultsOf(run) {
		got = append(got, fmt.Sprintf("%d %s %s|%s|%s", r.Line, r.Kind, r.Name, r.Unit, r.Text))
	}
	want := []string{
		"9 benchmark Resolve|ns/op|168.8", "9 benchmark Resolve|B/op|80", "9 benchmark Resolve|allocs/op|1",
		"10 benchmark Answer|ns/op|340.9", "10 benchmark Answer|B/op|248", "10 benchmark Answer|allocs/op|3",
		"12 benchmark ExportToImport|max-ms|760.5", "12 benchmark ExportToImport|min-ms|338.1",
		"13 benchmark GatewayFailover|ns/op|27131755197", "13 benchmark GatewayFailover|ms-gap-crash|1106", "13 benchmark GatewayFailover|ms-gap-graceful|327.0",
		"15 log GatewayFailover|s|1.109", "16 log GatewayFailover|ms|163", "17 log GatewayFailover|s|1.2",
		"21 table cell Gateway failover gap after a crash, ms (lab)|Figure|1106", "21 table cell Gateway failover gap after a crash, ms (lab)|Figure / target|0.55",
		"22 keyed line runtime.GC|cpu-s|8.872",
		"25 table cell CoreDNS hosts|queries/s|93868",
		"25 table cell CoreDNS hosts|rounds strait dns had the lower latency|1", "25 table cell CoreDNS hosts|rounds strait dns had the lower latency|3",
		"25 table cell CoreDNS hosts|rounds strait dns had the lower latency|3", "25 table cell CoreDNS hosts|rounds strait dns had the lower latency|3",
		"26 keyed line go_gc_duration_seconds_count||387",
	}
	if !slices.Equal(got, want) {
		t.Errorf("results:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAFigureMatchesAsWrittenOrRounded: a figure matches a result as written or rounded
// to the figure's decimals; nothing else.
func TestAFigureMatchesAsWrittenOrRounded(t *testing.T) {
	for _, c := range []struct {
		result, figure string
		want           bool
	}{
		{"1120", "1120", true}, {"0.1584", "0.158", true}, {"0.1584", "0.16", true}, {"1.106", "1.11", true},
		{"0.2", "0.20", true}, {"57.75", "57.8", true}, {"57.75", "58", true}, {"327.0", "327", true},
		{"1120", "1.12", false}, {"0.1584", "0.159", false}, {"1120", "1121", false}, {"89525", "89", false},
		{"57.75", "57.7", false}, {"0.1584", "0.1585", false},
	} {
		r := ResultsOf("BenchmarkX 1 " + c.result + " u\n")[0]
		if got := r.Matches(c.figure); got != c.want {
			t.Errorf("%s matches %q = %v, want %v", c.result, c.figure, got, c.want)
		}
	}
}

// TestAUnitIsAWordOfTheResultsUnit: the unit a page writes must be in the result's
// unit, or its column's header, as a word of its own.
func TestAUnitIsAWordOfTheResultsUnit(t *testing.T) {
	for _, c := range []struct {
		unit, page string
		want       bool
	}{
		{"ms-gap-crash", "ms", true}, {"max-RSS-MiB", "MiB", true}, {"RssAnon (MiB)", "MiB", true},
		{"raw-cpu-s/GB", "CPU-s per GB", true}, {"cpu-s/op", "cpu-s", true}, {"%CPU-idle", "%", true},
		{"rounds strait dns had the higher QPS / lower latency", "rounds", true}, {"s", "s", true},
		{"ms", "s", false}, {"ns/op", "s", false}, {"ms-gap-crash", "MiB", false}, {"allocs/op", "B/op", false},
		{"", "ms", false}, {"VmRSS (MiB)", "GiB", false},
	} {
		if got := (Result{Unit: c.unit}).InUnit(c.page); got != c.want {
			t.Errorf("%q in %q = %v, want %v", c.page, c.unit, got, c.want)
		}
	}
}
