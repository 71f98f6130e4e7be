package labtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Run runs a command as a person at this machine would, giving it timeout, and returns
// its standard output, standard error and exit status; a command that could not run
// (or was killed at the timeout) fails t.
func Run(t testing.TB, timeout time.Duration, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, _, code = RunStamped(t, timeout, bin, args...)
	return stdout, stderr, code
}

// RunStamped is Run that also returns standard error with each line stamped with when it
// came, from the command's start: where a slow command spent its time, for the log.
func RunStamped(t testing.TB, timeout time.Duration, bin string, args ...string) (stdout, stderr, stamped string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	// At the timeout the command's whole process group goes, not the command alone: a
	// script's children (hack/mcs-conformance.sh's Ginkgo and its specs) kept running and
	// holding its output open, and Run waited for them past its timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out strings.Builder
	errOut := &stampWriter{start: time.Now()}
	cmd.Stdout, cmd.Stderr = &out, errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		code = exit.ExitCode()
	default:
		t.Fatalf("%s %s: %v (within %s)\n%s%s", bin, strings.Join(args, " "), err, timeout, out.String(), errOut.stampedText())
	}
	return out.String(), errOut.text(), errOut.stampedText(), code
}

// stampWriter keeps what is written, and beside it each line prefixed with the time
// since start at which its first byte came.
type stampWriter struct {
	start   time.Time
	mu      sync.Mutex
	plain   bytes.Buffer
	stamped bytes.Buffer
	midLine bool
}

func (w *stampWriter) Write(p []byte) (int, error) {
	n := len(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.plain.Write(p)
	stamp := fmt.Sprintf("[%6.1fs] ", time.Since(w.start).Seconds())
	for len(p) > 0 {
		if !w.midLine {
			w.stamped.WriteString(stamp)
		}
		line, rest, found := bytes.Cut(p, []byte("\n"))
		w.stamped.Write(line)
		if found {
			w.stamped.WriteByte('\n')
		}
		w.midLine, p = !found, rest
	}
	return n, nil
}

func (w *stampWriter) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.plain.String()
}

func (w *stampWriter) stampedText() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stamped.String()
}
