package fuzzsh

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo plays `go test -fuzz`'s outcomes, one word of $FAKEGO_RUNS per fuzzing run, in
// the package directory fuzz.sh runs it in: pass; miss, the coordinator's bare deadline
// (what Go prints when it misses its own -fuzztime); find, a failing input written to
// testdata/fuzz as Go writes one. Every fuzzing run is counted in $FAKEGO_CALLS. A go
// test without -fuzz replays the seeds, which pass: a script that took that for fuzzing
// would pass a target nothing fuzzed.
const fakeGo = `#!/usr/bin/env bash
if [[ " $* " != *" -fuzz "* ]]; then echo "ok  	example/pkg/parse	0.01s"; exit 0; fi
n=$(( $(cat "$FAKEGO_CALLS" 2>/dev/null || echo 0) + 1 ))
echo "$n" > "$FAKEGO_CALLS"
read -ra runs <<< "$FAKEGO_RUNS"
case "${runs[n-1]:-}" in
pass) echo PASS; exit 0 ;;
miss) printf -- '--- FAIL: FuzzParse (30.02s)\n    context deadline exceeded\nFAIL\n'; exit 1 ;;
find)
  mkdir -p testdata/fuzz/FuzzParse
  printf 'go test fuzz v1\nstring("x")\n' > testdata/fuzz/FuzzParse/771e938e4458e983
  printf -- '--- FAIL: FuzzParse (1.20s)\n    Failing input written to testdata/fuzz/FuzzParse/771e938e4458e983\n    context deadline exceeded\nFAIL\n'
  exit 1 ;;
*) echo "fake go: no outcome for call $n ($*)" >&2; exit 2 ;;
esac
`

// run is fuzz.sh's outcome in a scratch repository holding one fuzz target,
// pkg/parse.FuzzParse, with the fake go playing runs.
type run struct {
	code           int
	stdout, stderr string
	calls          string // how many fuzzing runs go was asked for
}

func fuzzSh(t *testing.T, runs string) run {
	t.Helper()
	repo := t.TempDir()
	script, err := os.ReadFile(filepath.Join("..", "fuzz.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string]string{
		"hack/fuzz.sh":            string(script),
		"pkg/parse/parse_test.go": "package parse\n\nimport \"testing\"\n\nfunc FuzzParse(f *testing.F) { f.Fuzz(func(*testing.T, string) {}) }\n",
		"bin/go":                  fakeGo,
	} {
		p := filepath.Join(repo, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "hack", "pkg"}} {
		git := exec.Command("git", append([]string{"-C", repo}, args...)...)
		git.Env = env()
		if out, err := git.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", args[0], err, out)
		}
	}
	calls := filepath.Join(t.TempDir(), "calls")
	cmd := exec.Command("bash", filepath.Join(repo, "hack", "fuzz.sh"))
	cmd.Env = append(env(), "GO="+filepath.Join(repo, "bin", "go"), "FUZZTIME=1s",
		"FAKEGO_RUNS="+runs, "FAKEGO_CALLS="+calls)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := run{}
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("running fuzz.sh: %v", err)
		}
		r.code = exit.ExitCode()
	}
	n, _ := os.ReadFile(calls)
	r.stdout, r.stderr, r.calls = stdout.String(), stderr.String(), strings.TrimSpace(string(n))
	return r
}

// env is the test's environment without git's own variables: run from a git hook, they
// would point git at this repository instead of the scratch one.
func env() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			out = append(out, kv)
		}
	}
	return out
}

// TestAMissedDeadlineIsFuzzedOnceMore: the coordinator's missed deadline, no input
// written, gets the target fuzzed once more; that run passing passes, and says so.
func TestAMissedDeadlineIsFuzzedOnceMore(t *testing.T) {
	r := fuzzSh(t, "miss pass")
	if r.code != 0 || r.calls != "2" || !strings.Contains(r.stdout, "pkg/parse FuzzParse: reran after the coordinator missed its deadline: pass") {
		t.Errorf("exit %d after %s runs, want 0 after 2 saying it reran\nstdout:\n%s\nstderr:\n%s", r.code, r.calls, r.stdout, r.stderr)
	}
}

// TestTwoMissedDeadlinesFailTheTarget: a second miss fails, naming the target and that
// the coordinator missed its deadline twice: a machine too loaded to fuzz has not fuzzed.
func TestTwoMissedDeadlinesFailTheTarget(t *testing.T) {
	r := fuzzSh(t, "miss miss")
	if r.code != 1 || r.calls != "2" ||
		!strings.Contains(r.stderr, "pkg/parse FuzzParse: the fuzzing coordinator missed its -fuzztime deadline twice") ||
		!strings.Contains(r.stderr, "fuzzing failed: pkg/parse FuzzParse") {
		t.Errorf("exit %d after %s runs, want 1 after 2 naming the target and the two misses\nstdout:\n%s\nstderr:\n%s", r.code, r.calls, r.stdout, r.stderr)
	}
}

// TestAFindingFailsWithoutARerun: a failing input written fails at once, named to be
// committed with the fix, whatever else the output says.
func TestAFindingFailsWithoutARerun(t *testing.T) {
	r := fuzzSh(t, "find pass")
	if r.code != 1 || r.calls != "1" || !strings.Contains(r.stdout, "pkg/parse/testdata/fuzz/FuzzParse/771e938e4458e983") ||
		!strings.Contains(r.stderr, "fuzzing failed: pkg/parse FuzzParse") {
		t.Errorf("exit %d after %s runs, want 1 after 1 naming the input\nstdout:\n%s\nstderr:\n%s", r.code, r.calls, r.stdout, r.stderr)
	}
}

// TestAFuzzedTargetPasses: the plain case.
func TestAFuzzedTargetPasses(t *testing.T) {
	if r := fuzzSh(t, "pass"); r.code != 0 || r.calls != "1" || !strings.Contains(r.stdout, "fuzzed 1 target(s) for 1s each: nothing found") {
		t.Errorf("exit %d after %s runs\nstdout:\n%s\nstderr:\n%s", r.code, r.calls, r.stdout, r.stderr)
	}
}
