package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionCommandNamesProgramVersionAndRevision(t *testing.T) {
	cmd := NewVersionCommand("straitd")
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	b := Version()
	want := "straitd " + b.Version + " (revision " + b.Revision + ", "
	if !strings.HasPrefix(out.String(), want) || b.Version == "" || b.Revision == "" {
		t.Errorf("version prints %q, want it to start with %q", out.String(), want)
	}
}

func TestRevisionMarksAModifiedTree(t *testing.T) {
	for _, c := range []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}, "abc"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}, "abc-dirty"},
		{nil, ""},
	} {
		if got := vcsRevision(c.settings); got != c.want {
			t.Errorf("vcsRevision(%v) = %q, want %q", c.settings, got, c.want)
		}
	}
}
