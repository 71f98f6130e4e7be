package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and revision are set by the linker for release builds and images:
//
//	go build -ldflags "-X github.com/straitnet/strait/internal/cli.version=v0.1.0 -X github.com/straitnet/strait/internal/cli.revision=$(git rev-parse HEAD)"
//
// They are variables only because -X can set nothing else; nothing assigns them at run
// time. Left empty, Version reads what the go command recorded in the binary.
var (
	version  string
	revision string
)

// Build says which Strait a binary is.
type Build struct {
	// Version is the release, or "devel" for a build from a working tree.
	Version string
	// Revision is the commit, with "-dirty" when the tree had uncommitted changes.
	Revision string
	// Go is the Go release that built the binary.
	Go string
}

// Version is this binary's build: the linker's values when set, else the module version
// and the VCS stamp that `go build` records.
func Version() Build {
	b := Build{Version: version, Revision: revision, Go: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return withDefaults(b)
	}
	if b.Version == "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	if b.Revision == "" {
		b.Revision = vcsRevision(info.Settings)
	}
	return withDefaults(b)
}

func vcsRevision(settings []debug.BuildSetting) string {
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "-dirty"
	}
	return rev
}

func withDefaults(b Build) Build {
	if b.Version == "" {
		b.Version = "devel"
	}
	if b.Revision == "" {
		b.Revision = "unknown"
	}
	return b
}

// NewVersionCommand prints the build of program ("strait" or "straitd").
func NewVersionCommand(program string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the Go release of this " + program,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := Version()
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s (revision %s, %s)\n", program, b.Version, b.Revision, b.Go)
			return err
		},
	}
}
