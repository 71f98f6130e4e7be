package benchcite

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/straitnet/strait/hack/benchfmt"
)

// Kinds of result, by the form of output that reported it.
const (
	// Bench is a value of a `go test -bench` result line; Name is the benchmark
	// (benchfmt.Name: "HubScale/one-member-change"), Unit the metric's unit.
	Bench = "benchmark"
	// Log is a number with a unit in a test's log line ("failover_test.go:290: … 1.109s");
	// Name is the benchmark of the --- BENCH: block it is in, if any.
	Log = "log"
	// Cell is a number in a Markdown table's cell; Name is the row's first cell, Unit
	// the column's header.
	Cell = "table cell"
	// Keyed is the one number of a "key: value unit" line or a Prometheus sample; Name
	// is the key or the metric.
	Keyed = "keyed line"
)

// A Result is one figure a run reports, with what says which figure it is.
type Result struct {
	Line  int
	Kind  string
	Name  string
	Unit  string
	Value float64
	Text  string // as the output writes it, thousands separators dropped
}

var (
	// valueNumber is one value as Go's testing package or a table writes it
	// ("1120", "0.1584", "5.727e+03").
	valueNumber = `\d+(?:\.\d+)?(?:[eE][+-]?\d+)?`
	unitWord    = `[A-Za-zµ%][\w/%µ.-]*`
	// benchValues is what follows a benchmark's name: its iterations, then value–unit
	// pairs.
	benchValues = regexp.MustCompile(`^\s*\d+((?:\s+` + valueNumber + `\s+` + unitWord + `)+)\s*$`)
	benchPair   = regexp.MustCompile(`(` + valueNumber + `)\s+(` + unitWord + `)`)
	// logLine is a test's log line ("    failover_test.go:290: round 1, … 1.109s"), also
	// one a helper of the test logged from a file of the test's package that is not a
	// _test.go ("    suite.go:120: …": test/e2e/nat's).
	logLine = regexp.MustCompile(`^\s+[\w.-]+\.go:\d+: (.*)$`)
	// logMeasure is a number with its unit glued or one space after it; "round 1," and
	// "c2's" have none.
	logMeasure = regexp.MustCompile(`(` + valueNumber + `) ?(` + unitWord + `)`)
	// keyed is a line that is a key and one figure: "#     runtime.GC: 8.872 cpu-s".
	keyed = regexp.MustCompile(`^#?\s*([A-Za-z_][\w.() -]*?):\s+(` + valueNumber + `)(?:\s*(` + unitWord + `))?\s*$`)
	// promSample is a Prometheus sample without labels' noise; a metric's name has an
	// underscore, which keeps "rc 0" and the like out.
	promSample = regexp.MustCompile(`^([A-Za-z_:][\w:]*_[\w:]*)(?:\{[^}]*\})?\s+(` + valueNumber + `)\s*$`)
	// cellFigures is a cell that holds only figures: "1.761, 0.1792, 0.2307", "3/3, 1/3".
	cellFigures = regexp.MustCompile(`^` + valueNumber + `(?:\s*[,/]\s*` + valueNumber + `)*$`)
	cellNumber  = regexp.MustCompile(valueNumber)
	tableRule   = regexp.MustCompile(`^\|(?:\s*:?-+:?\s*\|)+\s*$`)
)

// runHeader are the keys hack/bench-header.sh writes at a file's top: they describe
// the machine and the commit, not what the run measured ("nproc: 2" is no result).
var runHeader = map[string]bool{"command": true, "commit": true, "date": true, "kernel": true, "nproc": true, "load average": true, "free -m": true}

// ResultsOf reads the figures a run's output reports: benchmark results, measurements
// its tests logged, its tables' cells and its "key: value" lines. Every other number
// (a date, the load average, an iteration count, a port, a node's start-up time, a
// stack trace's line) is not a result, so a figure cannot be vouched for by it.
func ResultsOf(output string) []Result {
	var rs []Result
	add := func(line int, kind, name, unit, text string) {
		v, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return
		}
		rs = append(rs, Result{Line: line, Kind: kind, Name: name, Unit: unit, Value: v, Text: text})
	}
	var (
		pending  string // a benchmark whose name was printed before its values' line
		logBench string // the benchmark of the --- BENCH: block being read
		header   []string
		inTable  bool
	)
	for i, line := range strings.Split(output, "\n") {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "|") {
			inTable, header = false, nil
		}
		switch {
		case strings.HasPrefix(line, "Benchmark"):
			name, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
			if j := strings.IndexByte(name, '\t'); j >= 0 {
				name, rest = name[:j], name[j:]+" "+rest
			}
			name = benchfmt.Name(name)
			m := benchValues.FindStringSubmatch(rest)
			if m == nil {
				pending = name // "BenchmarkX-2 \t{"level":…}", its values on a later line
				continue
			}
			pending = ""
			for _, p := range benchPair.FindAllStringSubmatch(m[1], -1) {
				add(n, Bench, name, p[2], p[1])
			}
		case strings.HasPrefix(trimmed, "--- BENCH: Benchmark"):
			logBench = benchfmt.Name(strings.TrimPrefix(trimmed, "--- BENCH: "))
		case pending != "" && benchValues.MatchString(line):
			for _, p := range benchPair.FindAllStringSubmatch(benchValues.FindStringSubmatch(line)[1], -1) {
				add(n, Bench, pending, p[2], p[1])
			}
			pending = ""
		case logLine.MatchString(line):
			text := logLine.FindStringSubmatch(line)[1]
			for _, m := range logMeasure.FindAllStringSubmatchIndex(text, -1) {
				if m[0] > 0 && isWordChar(text[m[0]-1]) {
					continue // "c2" is a name, not two of anything
				}
				add(n, Log, logBench, text[m[4]:m[5]], text[m[2]:m[3]])
			}
		case strings.HasPrefix(trimmed, "|"):
			cells := tableCells(trimmed)
			switch {
			case !inTable:
				inTable, header = true, cells
			case tableRule.MatchString(trimmed):
			default:
				for j, c := range cells {
					if j == 0 || !cellFigures.MatchString(c) {
						continue
					}
					unit := ""
					if j < len(header) {
						unit = header[j]
					}
					for _, f := range cellNumber.FindAllString(c, -1) {
						add(n, Cell, cells[0], unit, f)
					}
				}
			}
		default:
			if m := keyed.FindStringSubmatch(line); m != nil && !runHeader[strings.TrimSpace(m[1])] {
				add(n, Keyed, strings.TrimSpace(m[1]), m[3], m[2])
			} else if m := promSample.FindStringSubmatch(trimmed); m != nil {
				add(n, Keyed, m[1], "", m[2])
			}
		}
		if !strings.HasPrefix(line, " ") && !strings.HasPrefix(trimmed, "--- BENCH:") && !logLine.MatchString(line) {
			logBench = "" // a BENCH block is its indented log lines
		}
	}
	return rs
}

// tableCells are a Markdown row's cells, trimmed, bold marks dropped and thousands
// separators taken out of numbers.
func tableCells(row string) []string {
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	var cells []string
	for c := range strings.SplitSeq(row, "|") {
		c = strings.TrimSpace(strings.ReplaceAll(c, "**", ""))
		cells = append(cells, thousands.ReplaceAllString(c, "$1$2"))
	}
	return cells
}

// Matches reports whether figure is r's value as written or rounded to the figure's
// decimals (0.158 for 0.1584, 1120 for 1120.4, 0.20 for 0.2).
func (r Result) Matches(figure string) bool {
	if r.Text == figure {
		return true
	}
	decimals := 0
	if i := strings.IndexByte(figure, '.'); i >= 0 {
		decimals = len(figure) - i - 1
	}
	return strconv.FormatFloat(r.Value, 'f', decimals, 64) == figure
}

// InUnit reports whether r is in the unit a page writes after a figure: the result's
// unit (a table cell's: its column's header) holds it as a word of its own, case and
// "per" aside ("ms" is in "ms-gap-crash", "MiB" in "RssAnon (MiB)", "CPU-s per GB" in
// "raw-cpu-s/GB", "%" in "%CPU-idle"; "s" is not in "ms"). A page's "3 rounds" then
// cannot be vouched for by any 3 of the run.
func (r Result) InUnit(unit string) bool {
	u := strings.ToLower(strings.ReplaceAll(strings.Join(strings.Fields(unit), " "), " per ", "/"))
	if u == "" {
		return false
	}
	in := strings.ToLower(r.Unit)
	for from := 0; from < len(in); {
		j := strings.Index(in[from:], u)
		if j < 0 {
			return false
		}
		start, end := from+j, from+j+len(u)
		// A unit's letters may not run on into the result's: "s" is not in "ms".
		if (start == 0 || !isAlnum(in[start-1]) || !isAlnum(u[0])) &&
			(end == len(in) || !isAlnum(in[end]) || !isAlnum(u[len(u)-1])) {
			return true
		}
		from = start + 1
	}
	return false
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
