package labtest

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Run runs a command as a person at this machine would, giving it timeout, and returns
// its standard output, standard error and exit status; a command that could not run
// (or was killed at the timeout) fails t.
func Run(t testing.TB, timeout time.Duration, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		code = exit.ExitCode()
	default:
		t.Fatalf("%s %s: %v (within %s)\n%s%s", bin, strings.Join(args, " "), err, timeout, out.String(), errOut.String())
	}
	return out.String(), errOut.String(), code
}
