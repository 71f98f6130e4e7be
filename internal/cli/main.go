package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// ErrReported means a command printed its errors itself (one line each, such as a
// ClusterSet's field errors); Main then only exits with status 1.
var ErrReported = errors.New("errors reported")

// Main runs root with args and returns the process's exit status. Usage is not printed
// on a failure of the command itself, only cobra's own argument errors show it. A
// command that ran something else and failed with its exit status (client-go's exec
// error, as for "strait lab exec") exits with that status, as kubectl exec does.
func Main(root *cobra.Command, args []string, stderr io.Writer) int {
	root.SilenceUsage, root.SilenceErrors = true, true
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		if !errors.Is(err, ErrReported) {
			fmt.Fprintln(stderr, "error:", err)
		}
		var exited interface{ ExitStatus() int }
		if errors.As(err, &exited) && exited.ExitStatus() > 0 {
			return exited.ExitStatus()
		}
		return 1
	}
	return 0
}

// ExitStatus is a command's failure with the status Main exits with; Err nil means the
// command printed what it had to say (Main then prints nothing more).
type ExitStatus struct {
	Code int
	Err  error
}

func (e *ExitStatus) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// ExitStatus is the status Main exits with.
func (e *ExitStatus) ExitStatus() int { return e.Code }

// Unwrap makes an ExitStatus without an error ErrReported: Main then prints nothing more.
func (e *ExitStatus) Unwrap() error {
	if e.Err == nil {
		return ErrReported
	}
	return e.Err
}
