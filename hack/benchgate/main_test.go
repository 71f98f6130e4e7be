package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/straitnet/strait/hack/benchfmt"
)

// TestAFigureBehindItsFloorFailsTheGate: a ceiling exceeded, a floor undercut and a
// figure the run did not report each fail the gate; figures within their margins pass,
// and with several runs the worst decides.
func TestAFigureBehindItsFloorFailsTheGate(t *testing.T) {
	fs := []floor{
		{Bench: "Resolve", Unit: "allocs/op", Today: 1, Margin: 0},
		{Bench: "Compute", Unit: "ns/op", Today: 100e6, Margin: 1},
		{Bench: "CableThroughput/vxlan", Unit: "cable/raw", Today: 0.6, Margin: 0.25, MoreIsBetter: true},
	}
	for _, c := range []struct {
		out  string
		held bool
	}{
		{"BenchmarkResolve-2 1 181 ns/op 1 allocs/op\nBenchmarkCompute-2 3 199000000 ns/op\nBenchmarkCableThroughput/vxlan-2 3 0 ns/op 0.46 cable/raw\n", true},
		{"BenchmarkResolve-2 1 181 ns/op 2 allocs/op\nBenchmarkCompute-2 3 99000000 ns/op\nBenchmarkCableThroughput/vxlan-2 3 0 ns/op 0.6 cable/raw\n", false},
		{"BenchmarkResolve-2 1 181 ns/op 1 allocs/op\nBenchmarkCompute-2 3 99000000 ns/op\nBenchmarkCompute-2 3 201000000 ns/op\nBenchmarkCableThroughput/vxlan-2 3 0 ns/op 0.6 cable/raw\n", false},
		{"BenchmarkResolve-2 1 181 ns/op 1 allocs/op\nBenchmarkCompute-2 3 99000000 ns/op\nBenchmarkCableThroughput/vxlan-2 3 0 ns/op 0.44 cable/raw\n", false},
		{"BenchmarkResolve-2 1 181 ns/op 1 allocs/op\nBenchmarkCompute-2 3 99000000 ns/op\n", false},
	} {
		got, err := benchfmt.Parse(strings.NewReader(c.out))
		if err != nil {
			t.Fatal(err)
		}
		table, held := check(fs, got)
		if held != c.held {
			t.Errorf("held = %v, want %v for\n%s\n%s", held, c.held, c.out, table)
		}
	}
}

// TestFloorsAreTheCalibrationRuns: every floor's "today" is the median of its figures in
// the calibration runs kept in docs/bench/bench-gate.txt (at least three), and every one
// of those runs holds every floor: a margin narrower than the runs' own spread would
// fail CI on noise.
func TestFloorsAreTheCalibrationRuns(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "docs", "bench", "bench-gate.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := benchfmt.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, fl := range floors() {
		vs := got[fl.Bench][fl.Unit]
		if len(vs) < 3 {
			t.Errorf("%s %s: %d calibration runs in docs/bench/bench-gate.txt, want 3 or more", fl.Bench, fl.Unit, len(vs))
			continue
		}
		if m := median(vs); m != fl.Today {
			t.Errorf("%s %s: today %v, but the calibration runs' median is %v (%v)", fl.Bench, fl.Unit, fl.Today, m, vs)
		}
		for _, v := range vs {
			if fl.broken(v) {
				t.Errorf("%s %s: calibration run's %v breaks the floor %v (margin %.0f %% of %v)", fl.Bench, fl.Unit, v, fl.Limit(), fl.Margin*100, fl.Today)
			}
		}
	}
}

func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestTwiceTheWorkBreaksEveryFloor: a run that does each gated figure's work twice (twice
// the time, memory or allocations; half the throughput) breaks its floor, but for the
// floors marked Loose, each with its reason; and no floor is marked Loose that holds.
func TestTwiceTheWorkBreaksEveryFloor(t *testing.T) {
	for _, f := range floors() {
		twice := 2 * f.Today
		if f.MoreIsBetter {
			twice = f.Today / 2
		}
		switch {
		case f.Loose == "" && !f.broken(twice):
			t.Errorf("%s %s: twice the work (%v against %v) passes its floor %v (margin %.0f %%)", f.Bench, f.Unit, twice, f.Today, f.Limit(), f.Margin*100)
		case f.Loose != "" && f.broken(twice):
			t.Errorf("%s %s: marked Loose (%s), but twice the work breaks it: drop the mark", f.Bench, f.Unit, f.Loose)
		case f.Loose != "":
			t.Logf("%s %s: twice the work passes (margin %.0f %%): %s", f.Bench, f.Unit, f.Margin*100, f.Loose)
		}
	}
}

// TestPerformancePageShowsTheFloors: docs/performance.md's table of the floors is the
// one floors.go and the calibration runs make, row for row.
func TestPerformancePageShowsTheFloors(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "docs", "bench", "bench-gate.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, err := benchfmt.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	want, err := calibrationTable(floors(), runs)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), want) {
		for _, row := range strings.Split(strings.TrimSpace(want), "\n") {
			if !strings.Contains(string(page), row+"\n") {
				t.Errorf("docs/performance.md lacks the row %s", row)
			}
		}
		t.Errorf("docs/performance.md's table of the floors is not floors.go's: paste what `go run ./hack/benchgate -calibration docs/bench/bench-gate.txt` prints")
	}
}
