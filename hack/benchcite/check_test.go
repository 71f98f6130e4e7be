package benchcite

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// reader serves files as Check reads them.
func reader(files map[string]string) func(string) (string, error) {
	return func(path string) (string, error) {
		out, ok := files[path]
		if !ok {
			return "", fmt.Errorf("%s: %w", path, os.ErrNotExist)
		}
		return out, nil
	}
}

const footnote = "\n\n[^run]: [run](bench/run.txt)\n"

// checkRun is Check of a page citing run (results_test.go) as [^run].
func checkRun(page string) []error {
	return Check(page+footnote, reader(map[string]string{"bench/run.txt": run}))
}

// TestCheckNamesWhatIsWrong: a figure missing from its run, a reference without a
// footnote, a footnote without a bench/ link, a missing file, an output that reports
// nothing and an unused footnote are each reported with the line or the footnote; a page
// whose figures are all in their runs passes.
func TestCheckNamesWhatIsWrong(t *testing.T) {
	read := reader(map[string]string{
		"bench/lab.txt":   "BenchmarkGatewayFailover-2 3 1 ns/op 1120 ms-gap-crash 188.0 ms-gap-graceful\n",
		"bench/noise.txt": "# date: 2026-11-26\n  ready in 42.1s\n",
	})
	good := "crash 1120 ms[^lab], graceful 188 ms[^lab]\n\n[^lab]: [docs/bench/lab.txt](bench/lab.txt), `make bench-lab`.\n"
	if errs := Check(good, read); len(errs) > 0 {
		t.Errorf("a page citing its run's figures: %v", errs)
	}
	for _, c := range []struct{ page, want string }{
		{"crash 1110 ms[^lab]\n\n[^lab]: [lab](bench/lab.txt)\n", "line 1: 1110 ms is not a result in bench/lab.txt (cited as [^lab])"},
		{"crash 1120 ms[^run]\n\n[^lab]: [lab](bench/lab.txt)\n", "line 1: [^run] has no footnote"},
		{"crash 1120 ms[^run]\n\n[^lab]: [lab](bench/lab.txt)\n", "footnote [^lab] (bench/lab.txt) is cited nowhere"},
		{"crash 1120 ms[^lab]\n\n[^lab]: bench-lab.txt\n", "line 3: footnote [^lab] links no file under bench/"},
		{"crash 1120 ms[^lab]\n\n[^lab]: [lab](bench/gone.txt)\n", "footnote [^lab]: bench/gone.txt: file does not exist"},
		{"up in 42.1 s[^lab]\n\n[^lab]: [lab](bench/noise.txt)\n", "footnote [^lab]: bench/noise.txt reports no result"},
		{"crash 1120 ms[^lab]\n\n[^lab]: [lab](bench/lab.txt)\n[^old]: [lab](bench/lab.txt)\n", "footnote [^old] (bench/lab.txt) is cited nowhere"},
	} {
		errs := Check(c.page, read)
		if !slices.ContainsFunc(errs, func(err error) bool { return strings.Contains(err.Error(), c.want) }) {
			t.Errorf("page %q: errors %v, want one with %q", c.page, errs, c.want)
		}
	}
}

// TestANumberThatIsNoResultVouchesForNothing: a figure that is in the run's output only
// as part of its date, its load average, an iteration count, a lab's timing, a log line's
// round or source line, or a package's run time is not vouched for.
func TestANumberThatIsNoResultVouchesForNothing(t *testing.T) {
	for _, page := range []string{
		"18[^run]", "2026[^run]", "15.82[^run]", "7116612[^run]", "3.9 s[^run]", "42.1[^run]",
		"290[^run]", "525.189[^run]", "2[^run]", "0[^run]",
	} {
		errs := checkRun(page)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), "is not a result in bench/run.txt") {
			t.Errorf("%q: errors %v, want one saying it is not a result", page, errs)
		}
	}
	for _, page := range []string{"1106[^run]", "1.109 s[^run]", "163 ms[^run]", "8.872 cpu-s[^run]", "387[^run]", "760.5 ms[^run]", "1/3 rounds[^run]", "93,868 queries/s[^run]"} {
		if errs := checkRun(page); len(errs) > 0 {
			t.Errorf("%q, a result of the run: %v", page, errs)
		}
	}
}

// TestTheLineNamesWhichResultsVouch: a table row of the file's targets' table is
// vouched for by that row, a line naming a benchmark (and a unit) by that benchmark's
// values (in that unit), and a figure in a unit by results in that unit: 3 is Answer's
// allocs/op, not Resolve's; 80 is Resolve's B/op, not its allocs/op.
func TestTheLineNamesWhichResultsVouch(t *testing.T) {
	for _, c := range []struct{ page, want string }{
		{"| Resolve (dns/resolver) | allocs/op | 3[^run] |", "line 1: 3 is not a value of BenchmarkResolve in allocs/op in bench/run.txt (cited as [^run]); it holds 1"},
		{"| Resolve (dns/resolver) | allocs/op | 80[^run] |", "line 1: 80 is not a value of BenchmarkResolve in allocs/op"},
		{"| BenchmarkResolve | 248[^run] |", "line 1: 248 is not a result of BenchmarkResolve"},
		{"| Gateway failover gap after a crash, ms (lab) | 327[^run] |", `line 1: 327 is not in the row "Gateway failover gap after a crash, ms (lab)"`},
		{"graceful 327 s[^run]", "line 1: 327 s is not a result"},
		{"248 rounds[^run]", "line 1: 248 rounds is not a result"},
	} {
		errs := checkRun(c.page)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("%q: errors %v, want one with %q", c.page, errs, c.want)
		}
	}
	for _, page := range []string{
		"| Resolve (dns/resolver) | allocs/op | 1[^run] |",
		"| Answer (dns/server) | allocs/op | 3[^run] |",
		"| BenchmarkResolve | 168.8[^run] | 80[^run] | 1[^run] |",
		"| Gateway failover gap after a crash, ms (lab) | 1106[^run] | ≤ 2000 | 0.55[^run] |",
		"| GatewayFailover | ms-gap-graceful | 327[^run] |",
		"BenchmarkGatewayFailover's first round: 1.109 s[^run]",
	} {
		if errs := checkRun(page); len(errs) > 0 {
			t.Errorf("%q, vouched for by what it names: %v", page, errs)
		}
	}
}
