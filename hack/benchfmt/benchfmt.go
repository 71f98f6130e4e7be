package benchfmt

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// Figures are a run's metrics: benchmark name (without "Benchmark" and the GOMAXPROCS
// suffix, "HubScale/full-reconcile") → unit ("cpu-s/op") → every value reported, in
// order (a benchmark run with -count 3 has three).
type Figures map[string]map[string][]float64

// Parse reads `go test -bench` output. Lines that are not a benchmark's result (logs,
// "--- FAIL: Benchmark…", a name printed alone before its result, headers) are skipped.
func Parse(r io.Reader) (Figures, error) {
	out := Figures{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue // a "--- FAIL: Benchmark…" line or a name printed alone
		}
		name := Name(f[0])
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			if out[name] == nil {
				out[name] = map[string][]float64{}
			}
			out[name][f[i+1]] = append(out[name][f[i+1]], v)
		}
	}
	return out, sc.Err()
}

// Name is a benchmark's name as Figures keys it: "BenchmarkHubScale/full-reconcile-2"
// → "HubScale/full-reconcile".
func Name(field string) string {
	name := strings.TrimPrefix(field, "Benchmark")
	if i := strings.LastIndex(name, "-"); i > 0 {
		if _, err := strconv.Atoi(name[i+1:]); err == nil {
			name = name[:i]
		}
	}
	return name
}
