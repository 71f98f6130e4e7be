package require

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// CI says whether the environment variable CI is set: then a test that cannot run fails
// instead of skipping.
func CI() bool { return os.Getenv("CI") != "" }

// Skip skips t, saying why, or fails it when CI is set.
func Skip(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf(format+" (CI is set, so it may not skip)", args...)
	}
	t.Skipf(format, args...)
}

// MainSkip is Skip for a TestMain whose whole package cannot run: it prints why and
// returns the exit code, 0 (skipped) or, when CI is set, 1.
func MainSkip(format string, args ...any) int {
	reason := fmt.Sprintf(format, args...)
	if CI() {
		fmt.Fprintf(os.Stderr, "FAIL: %s (CI is set, so the tests may not skip)\n", reason)
		return 1
	}
	fmt.Fprintf(os.Stderr, "SKIP: %s\n", reason)
	return 0
}

// Root makes t a root-only test: it skips under -short, and without root or one of the
// tools (ip(8) always) it skips, or fails when CI is set.
func Root(t testing.TB, tools ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root and network namespaces; not a -short test")
	}
	if reason := RootLacks(tools...); reason != "" {
		Skip(t, "%s", reason)
	}
}

// RootLacks says what this machine lacks for a root-only test using tools (ip(8)
// always), or "".
func RootLacks(tools ...string) string {
	if os.Geteuid() != 0 {
		return "needs root"
	}
	for _, tool := range append([]string{"ip"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("needs %s: %v", tool, err)
		}
	}
	return ""
}

// Eventually calls check until it returns nil and returns how long that took; after
// timeout it fails t with what and check's last error.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	took, err := Within(timeout, check)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return took
}

// Within calls check until it returns nil and returns how long that took, or, after
// timeout, an error carrying check's last: for a caller that has more to say first.
func Within(timeout time.Duration, check func() error) (time.Duration, error) {
	start := time.Now()
	for {
		err := check()
		if err == nil {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return timeout, fmt.Errorf("not within %v: %w", timeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// pollInterval is short next to the seconds a test waits, and long enough not to load
// the API servers and namespaces being watched.
const pollInterval = 50 * time.Millisecond
