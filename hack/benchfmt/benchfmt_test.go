package benchfmt

import (
	"slices"
	"strings"
	"testing"
)

// TestParseKeepsEveryRunsFigures: the benchmarks' own lines are read by name and unit,
// -count repeats keep every value, and failed or log lines are skipped.
func TestParseKeepsEveryRunsFigures(t *testing.T) {
	out := `goos: linux
BenchmarkResolve-2   	 6543210	       181.2 ns/op	      80 B/op	       1 allocs/op
BenchmarkHubScale/full-reconcile-2         	       1	         0 ns/op	        54.60 cpu-s/op	      5300 max-RSS-MiB
BenchmarkHubScale/full-reconcile-2         	       1	         0 ns/op	        56.30 cpu-s/op	      5100 max-RSS-MiB
BenchmarkGatewayFailover-2   	--- FAIL: BenchmarkGatewayFailover-2
BenchmarkGatewayFailover
    bench_test.go:57: a log line 1 2 3
BenchmarkDNSAgainstCoreDNSHosts 1 1.459 qps-ratio 0.9405 rss-ratio
`
	got, err := Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, unit string
		want       []float64
	}{
		{"Resolve", "ns/op", []float64{181.2}},
		{"Resolve", "allocs/op", []float64{1}},
		{"HubScale/full-reconcile", "cpu-s/op", []float64{54.6, 56.3}},
		{"HubScale/full-reconcile", "max-RSS-MiB", []float64{5300, 5100}},
		{"DNSAgainstCoreDNSHosts", "rss-ratio", []float64{0.9405}},
	} {
		if v := got[c.name][c.unit]; !slices.Equal(v, c.want) {
			t.Errorf("%s %s = %v, want %v", c.name, c.unit, v, c.want)
		}
	}
	if _, ok := got["GatewayFailover"]; ok {
		t.Errorf("a failed benchmark gave figures: %v", got["GatewayFailover"])
	}
}
