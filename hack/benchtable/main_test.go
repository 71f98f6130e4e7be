package main

import (
	"strings"
	"testing"

	"github.com/straitnet/strait/hack/benchfmt"
)

// TestTableFromBenchOutput: figures come from the benchmarks' own lines (failed ones and
// log lines are skipped), the worst of several runs decides, and a target the run did
// not measure says so.
func TestTableFromBenchOutput(t *testing.T) {
	out := `goos: linux
BenchmarkCableThroughput/wireguard-2   	       3	 0 ns/op	 13.86 raw-Gbit/s	 2.150 cable-Gbit/s	 0.1550 cable/raw	 0.1200 cable/raw-min	 0.1700 cable/raw-max	 7.400 cable-cpu-s/GB
BenchmarkCableThroughput/vxlan-2   	       3	 0 ns/op	 0.7200 cable/raw
BenchmarkHubScale/full-reconcile-2         	       1	         0 ns/op	        54.60 cpu-s/op	         0 writes/op	      5300 max-RSS-MiB
BenchmarkHubScale/full-reconcile-2         	       1	         0 ns/op	        56.30 cpu-s/op	         0 writes/op	      5100 max-RSS-MiB
BenchmarkGatewayFailover-2   	--- FAIL: BenchmarkGatewayFailover-2
BenchmarkGatewayFailover-2   	2	45050505052 ns/op	1106 ms-gap-crash	339.0 ms-gap-graceful
    bench_test.go:57: a log line 1 2 3
`
	got, err := benchfmt.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	tab := table(targets(), got)
	for _, want := range []string{
		"| WireGuard cable / raw pod → pod (lab) | 0.155 | ≥ 0.25 | 0.62 | no |",
		"| VXLAN cable / raw pod → pod (lab) | 0.72 | ≥ 0.8 | 0.90 | no |",
		"| WireGuard cable, machine CPU-s per GB (lab) | 7.4 | — | | |",
		"| Hub, 255 members × 10,000 exports: full reconcile, CPU-s | 54.6, 56.3 | ≤ 5 | 11.26 | no |",
		"| Hub, 255 members × 10,000 exports: peak RSS, MiB | 5300, 5100 | — | | |",
		"| Gateway failover gap, graceful, ms (lab) | 339 | ≤ 500 | 0.68 | yes |",
		"| Agent with 254 peers: RSS, MiB | not in this run | ≤ 60 | | |",
	} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
}
