package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Sep joins a nested step's name to its parents' (hack/timed.sh writes it too).
const Sep = " > "

// Row is one timed thing: a step, a package, a test or a lab's bring-up.
type Row struct {
	// Path is the names from the outermost step down.
	Path    []string
	Seconds float64
	// Status is the exit status: 0 passed; for a package or test 1 means FAIL.
	Status int
	// Measured marks a row tee read from go test (a package, a test, a lab up): its
	// siblings are sorted by time, a step's are kept in the order they ran.
	Measured bool
}

// ParseRows reads the TSV rows: name, seconds, status and an optional "measured".
func ParseRows(r io.Reader) ([]Row, error) {
	var rows []Row
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: %q: want name, seconds and status separated by tabs", n, line)
		}
		secs, err := strconv.ParseFloat(f[1], 64)
		if err != nil || secs < 0 {
			return nil, fmt.Errorf("line %d: seconds %q: not a duration in seconds", n, f[1])
		}
		status, err := strconv.Atoi(f[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: status %q: not an exit status", n, f[2])
		}
		rows = append(rows, Row{Path: strings.Split(f[0], Sep), Seconds: secs, Status: status,
			Measured: len(f) > 3 && f[3] == "measured"})
	}
	return rows, sc.Err()
}

// Format is a row as ParseRows reads it.
func (r Row) Format() string {
	s := fmt.Sprintf("%s\t%.1f\t%d", strings.Join(r.Path, Sep), r.Seconds, r.Status)
	if r.Measured {
		s += "\tmeasured"
	}
	return s
}

var (
	// ok  	github.com/straitnet/strait/test/e2e	989.123s
	// FAIL	github.com/straitnet/strait/test/e2e	12.301s
	pkgLine = regexp.MustCompile(`^(ok|FAIL)\s+(\S+)\s+([0-9.]+)s\b`)
	// --- PASS: TestCables (120.45s)   (top level only: a subtest is indented)
	testLine = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)
	// lab up: 55.4s, err=<nil>   (test/labtest's Main)
	labUpLine = regexp.MustCompile(`^lab up: ([0-9.]+)s, err=(.*)$`)
)

// modulePrefix is left off package names in the table.
const modulePrefix = "github.com/straitnet/strait/"

// Reader turns go test's output into rows under a parent step, a package's as its
// line arrives (its tests and lab up, seen before it, go under it).
type Reader struct {
	parent  []string
	pending []Row
}

// NewReader reads rows under the step path parent (empty: at the top).
func NewReader(parent []string) *Reader { return &Reader{parent: parent} }

// Line takes one line of output and returns the rows it completes.
func (r *Reader) Line(line string) []Row {
	if m := testLine.FindStringSubmatch(line); m != nil {
		secs, _ := strconv.ParseFloat(m[3], 64)
		status := 0
		if m[1] == "FAIL" {
			status = 1
		}
		r.pending = append(r.pending, Row{Path: []string{m[2]}, Seconds: secs, Status: status, Measured: true})
		return nil
	}
	if m := labUpLine.FindStringSubmatch(line); m != nil {
		secs, _ := strconv.ParseFloat(m[1], 64)
		status := 0
		if m[2] != "<nil>" {
			status = 1
		}
		r.pending = append(r.pending, Row{Path: []string{"lab up"}, Seconds: secs, Status: status, Measured: true})
		return nil
	}
	m := pkgLine.FindStringSubmatch(line)
	if m == nil {
		return nil
	}
	secs, _ := strconv.ParseFloat(m[3], 64)
	status := 0
	if m[1] == "FAIL" {
		status = 1
	}
	pkg := strings.TrimPrefix(m[2], modulePrefix)
	var rows []Row
	for _, p := range r.pending {
		rows = append(rows, Row{Path: r.under(pkg, p.Path[0]), Seconds: p.Seconds, Status: p.Status, Measured: true})
	}
	r.pending = nil
	return append(rows, Row{Path: r.under(pkg), Seconds: secs, Status: status, Measured: true})
}

func (r *Reader) under(names ...string) []string {
	return append(append([]string(nil), r.parent...), names...)
}
