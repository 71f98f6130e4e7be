package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/straitnet/strait/hack/benchfmt"
)

// floor is one figure a benchmark must keep.
type floor struct {
	// Bench is the benchmark's name without "Benchmark" and the -N suffix, Unit its metric.
	Bench, Unit string
	// Today is the median of the calibration runs (docs/bench/bench-gate.txt).
	Today float64
	// Margin is how far a run may fall behind Today before it fails, as a fraction of
	// Today: the floor is Today × (1 − Margin) for a figure where more is better, the
	// ceiling Today × (1 + Margin) otherwise.
	Margin float64
	// MoreIsBetter: throughput and ratios of it; otherwise time, memory, allocations.
	MoreIsBetter bool
	// Loose says why this floor still lets a run doing the work twice pass (a margin of
	// 100 % or more), until a measure that can hold it replaces it: a wall time on a
	// shared machine with no CPU figure or ratio measured in the same run beside it. Every
	// other floor fails twice the work (TestTwiceTheWorkBreaksEveryFloor).
	Loose string
}

// Limit is the figure a run must not fall behind.
func (f floor) Limit() float64 {
	if f.MoreIsBetter {
		return f.Today * (1 - f.Margin)
	}
	return f.Today * (1 + f.Margin)
}

// broken reports whether v falls behind the floor.
func (f floor) broken(v float64) bool {
	if f.MoreIsBetter {
		return v < f.Limit()
	}
	return v > f.Limit()
}

// check is the table of every floor against the run's figures, and whether any floor
// broke; the worst of several figures (-count) decides, and a floor the run did not
// measure breaks too (a gate benchmark that stopped reporting would hold nothing).
func check(fs []floor, got benchfmt.Figures) (string, bool) {
	var b strings.Builder
	ok := true
	b.WriteString("| Benchmark | Unit | Today | Margin | Floor | This run | Held |\n|---|---|---|---|---|---|---|\n")
	for _, f := range fs {
		bound := map[bool]string{true: "≥ ", false: "≤ "}[f.MoreIsBetter] + limit(f.Limit())
		vs := got[f.Bench][f.Unit]
		if len(vs) == 0 {
			ok = false
			fmt.Fprintf(&b, "| %s | %s | %s | %.0f %% | %s | not in this run | **no** |\n", f.Bench, f.Unit, num(f.Today), f.Margin*100, bound)
			continue
		}
		var figs []string
		held := "yes"
		for _, v := range vs {
			figs = append(figs, num(v))
			if f.broken(v) {
				held = "**no**"
				ok = false
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f %% | %s | %s | %s |\n", f.Bench, f.Unit, num(f.Today), f.Margin*100, bound, strings.Join(figs, ", "), held)
	}
	return b.String(), ok
}

// num is a figure as the run wrote it (no exponent: 263843, 0.1428), so the table can be
// quoted and found in the run's output.
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// limit is a floor rounded for reading: whole units from 1,000 up, else 4 digits.
func limit(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func main() { os.Exit(run(os.Args[1:], os.Stdout)) }

// run reads the outputs named in args (stdin without any) and prints the floors' table:
// 0 when every floor held, 1 when one broke, 2 when the output cannot be read. With
// -calibration first, the outputs are the calibration runs and the table is the
// performance page's (calibrationTable).
func run(args []string, stdout io.Writer) int {
	calibration := len(args) > 0 && args[0] == "-calibration"
	if calibration {
		args = args[1:]
	}
	var in io.Reader = os.Stdin
	if len(args) > 0 {
		var rs []io.Reader
		for _, p := range args {
			f, err := os.Open(p)
			if err != nil {
				fmt.Fprintln(os.Stderr, "benchgate:", err)
				return 2
			}
			defer f.Close()
			rs = append(rs, f)
		}
		in = io.MultiReader(rs...)
	}
	got, err := benchfmt.Parse(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchgate:", err)
		return 2
	}
	if calibration {
		table, err := calibrationTable(floors(), got)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchgate:", err)
			return 2
		}
		fmt.Fprint(stdout, table)
		return 0
	}
	table, ok := check(floors(), got)
	fmt.Fprint(stdout, table)
	if !ok {
		fmt.Fprintln(stdout, "benchgate: a figure broke its floor or is missing: a regression against the calibration runs in docs/bench/bench-gate.txt")
		return 1
	}
	return 0
}
