package udiff

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/straitnet/strait/test/require"
)

// Our unified diff is the one GNU diff -u prints for the same two texts: the same hunks,
// the same ranges, the same lines (compared where diff is installed).
func TestUnifiedDiffMatchesDiffU(t *testing.T) {
	base := "apiVersion: strait.io/v1alpha1\nkind: Peer\nmetadata:\n  name: c2\n  namespace: strait-system\nspec:\n  cidrs:\n  - 10.2.0.0/16\n  - 10.102.0.0/16\n  clusterID: c2\n"
	var long []string
	for i := range 40 {
		long = append(long, "  - line "+string(rune('a'+i%26))+strings.Repeat("x", i%5))
	}
	longText := strings.Join(long, "\n") + "\n"
	changedLong := strings.Replace(strings.Replace(longText, "line cxx", "line C", 1), "line nx\n", "", 1) + "  - tail\n"
	cases := []struct{ name, from, to string }{
		{"one line changed", base, strings.Replace(base, "10.2.0.0/16", "10.3.0.0/16", 1)},
		{"created", "", base},
		{"deleted", base, ""},
		{"far apart changes", longText, changedLong},
		{"line added at the top", longText, "first\n" + longText},
	}
	diffBin, err := exec.LookPath("diff")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Unified("a", "b", c.from, c.to)
			if !strings.HasPrefix(got, "--- a\n+++ b\n@@ ") {
				t.Fatalf("no header and hunk:\n%s", got)
			}
			if err != nil {
				require.Skip(t, "no diff program to compare with: %v", err)
			}
			dir := t.TempDir()
			fa, fb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			if err := os.WriteFile(fa, []byte(c.from), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(fb, []byte(c.to), 0o600); err != nil {
				t.Fatal(err)
			}
			out, _ := exec.Command(diffBin, "-u", "-N", "--label", "a", "--label", "b", fa, fb).Output()
			if got != string(out) {
				t.Errorf("ours:\n%s\ndiff -u:\n%s", got, out)
			}
		})
	}
	if got := Unified("a", "b", base, base); got != "" {
		t.Errorf("equal texts give %q", got)
	}
}

func TestFileIsHeadedAsGitHeadsIt(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{"clusterset.yaml", "--- a/clusterset.yaml\n+++ b/clusterset.yaml\n"},
		{filepath.Join(wd, "sub", "clusterset.yaml"), "--- a/sub/clusterset.yaml\n+++ b/sub/clusterset.yaml\n"},
		{"/elsewhere/clusterset.yaml", "--- a/elsewhere/clusterset.yaml\n+++ b/elsewhere/clusterset.yaml\n"},
	} {
		if got := File(c.path, "x\n", "y\n"); !strings.HasPrefix(got, c.want) {
			t.Errorf("File(%q) is headed %q, want %q", c.path, strings.SplitN(got, "@@", 2)[0], c.want)
		}
	}
}
