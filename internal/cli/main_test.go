package cli

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/client-go/util/exec"
)

// The exit status of a command run elsewhere (as by "strait lab exec") comes through;
// any other failure is 1.
func TestMainExitsWithTheStatusOfWhatItRan(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("bad flag value"), 1},
		{ErrReported, 1},
		{fmt.Errorf("exec in sample/client of cluster c1: %w", exec.CodeExitError{Err: errors.New("exit 3"), Code: 3}), 3},
	} {
		root := &cobra.Command{Use: "strait", RunE: func(*cobra.Command, []string) error { return tc.err }}
		if got := Main(root, nil, io.Discard); got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.err, got, tc.want)
		}
	}
}
