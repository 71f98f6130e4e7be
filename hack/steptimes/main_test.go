package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goTestOutput is what `go test -v -p 1 ./test/e2e/...` prints, cut down: a lab up line
// from labtest, top-level tests, a subtest, a package that failed.
const goTestOutput = `=== RUN   TestCables
lab up: 55.4s, err=<nil>
--- PASS: TestCables (120.45s)
    --- PASS: TestCables/wireguard (40.10s)
--- PASS: TestPodToPod (1.20s)
--- SKIP: TestSomething (0.00s)
PASS
ok  	github.com/straitnet/strait/test/e2e	989.123s
lab up: 61.0s, err=context deadline exceeded
--- FAIL: TestGlobalIPs (3.50s)
FAIL
FAIL	github.com/straitnet/strait/test/e2e/globalnet	80.002s
ok  	github.com/straitnet/strait/plan	(cached)
`

func TestTeeRecordsPackagesTestsAndLabUpUnderTheStep(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "times.tsv")
	var out bytes.Buffer
	if err := tee(strings.NewReader(goTestOutput), &out, file, NewReader([]string{"make test", "e2e labs"})); err != nil {
		t.Fatal(err)
	}
	if out.String() != goTestOutput {
		t.Errorf("tee changed the output:\n%s", out.String())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"make test > e2e labs > test/e2e > lab up\t55.4\t0\tmeasured",
		"make test > e2e labs > test/e2e > TestCables\t120.5\t0\tmeasured",
		"make test > e2e labs > test/e2e > TestPodToPod\t1.2\t0\tmeasured",
		"make test > e2e labs > test/e2e > TestSomething\t0.0\t0\tmeasured",
		"make test > e2e labs > test/e2e\t989.1\t0\tmeasured",
		"make test > e2e labs > test/e2e/globalnet > lab up\t61.0\t1\tmeasured",
		"make test > e2e labs > test/e2e/globalnet > TestGlobalIPs\t3.5\t1\tmeasured",
		"make test > e2e labs > test/e2e/globalnet\t80.0\t1\tmeasured",
	}, "\n") + "\n"
	if string(data) != want {
		t.Errorf("rows:\n%s\nwant:\n%s", data, want)
	}
}

func TestTableNestsStepsAndSaysWhatChildrenLeaveOut(t *testing.T) {
	rows, err := ParseRows(strings.NewReader(strings.Join([]string{
		"host-deps\t12.0\t0",
		"make test > unit packages\t600.0\t0",
		"make test > e2e labs > test/e2e > lab up\t55.0\t0\tmeasured",
		"make test > e2e labs > test/e2e > TestPodToPod\t5.0\t0\tmeasured",
		"make test > e2e labs > test/e2e > TestCables\t120.0\t0\tmeasured",
		"make test > e2e labs > test/e2e\t200.0\t0\tmeasured",
		"make test > e2e labs\t210.0\t0",
		"make test\t820.0\t2",
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	Table(&out, rows, false)
	want := `  seconds    m:ss share  step
    832.0   13:52  100%  total
     12.0    0:12    1%    host-deps
    820.0   13:40   99%    make test  FAILED (exit 2)
    600.0   10:00   72%      unit packages
    210.0    3:30   25%      e2e labs
    200.0    3:20   24%        test/e2e
    120.0    2:00   14%          TestCables
     55.0    0:55    7%          lab up
      5.0    0:05    1%          TestPodToPod
     20.0    0:20    2%          (the rest: builds, lab down, checks between)
     10.0    0:10    1%        (the rest: builds, lab down, checks between)
     10.0    0:10    1%      (the rest: builds, lab down, checks between)
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestParseRowsNamesTheBadLine(t *testing.T) {
	for _, in := range []string{"step\tsoon\t0", "step\t1.0", "step\t1.0\tok", "step\t-1\t0"} {
		if _, err := ParseRows(strings.NewReader("a\t1\t0\n" + in)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: err = %v, want one naming line 2", in, err)
		}
	}
}

func TestTableShowsTheSlowestAndSumsTheRest(t *testing.T) {
	var rows []Row
	for i := 0; i < maxMeasured+3; i++ {
		rows = append(rows, Row{Path: []string{"unit", "pkg" + string(rune('a'+i))}, Seconds: float64(i + 1), Measured: true})
	}
	var out bytes.Buffer
	Table(&out, rows, false)
	if !strings.Contains(out.String(), "(3 more)") || !strings.Contains(out.String(), "     6.0 ") {
		t.Errorf("want the 3 fastest (1+2+3 s) summed as (3 more):\n%s", out.String())
	}
	if strings.Contains(out.String(), "pkga") {
		t.Errorf("the fastest package shown:\n%s", out.String())
	}
}

// A parent's "(the rest ...)" is its time less every child's, the ones folded into
// "(N more)" included: the e2e labs' table once said 203 s where 58 were unexplained.
func TestTheRestCountsTheFoldedChildren(t *testing.T) {
	rows := []Row{{Path: []string{"e2e"}, Seconds: 3000}}
	var children float64
	for i := 0; i < maxMeasured+5; i++ {
		s := float64(10 * (i + 1))
		children += s
		rows = append(rows, Row{Path: []string{"e2e", "Test" + string(rune('A'+i))}, Seconds: s, Measured: true})
	}
	var out bytes.Buffer
	Table(&out, rows, false)
	want := fmt.Sprintf("%9.1f", 3000-children)
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "(the rest") {
			if !strings.HasPrefix(line, want) {
				t.Errorf("the rest: %q, want %s s (3000 less the children's %.0f s)", line, want, children)
			}
			return
		}
	}
	t.Errorf("no rest line (%.0f s unexplained):\n%s", 3000-children, out.String())
}
