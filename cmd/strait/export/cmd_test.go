package export

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/straitnet/strait/internal/cli"
)

// basic is the ClusterSet file plan/file's edit tests edit: the basic example as a user
// keeps it, with comments in and around the exports.
var basic = readFile("../../../plan/file/testdata/basic.yaml")

// strait export with --commit in a clusterset repo: the diff printed, the file changed
// and committed alone (a staged change to another file stays staged), nothing else.
func TestExportCommitsTheFileAlone(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.org"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "--quiet")
	file := filepath.Join(dir, "clusterset.yaml")
	if err := os.WriteFile(file, []byte(basic), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "--quiet", "-m", "initial")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "README")

	t.Setenv("GIT_AUTHOR_NAME", "t")
	t.Setenv("GIT_AUTHOR_EMAIL", "t@example.org")
	t.Setenv("GIT_COMMITTER_NAME", "t")
	t.Setenv("GIT_COMMITTER_EMAIL", "t@example.org")
	root := &cobra.Command{Use: "strait"}
	root.AddCommand(NewExportCommand(), NewUnexportCommand())
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	code := cli.Main(root, []string{"export", "shop/cart", "--clusters", "c2,c3", "-f", file, "--commit"}, &errOut)
	t.Logf("exit %d\n%s%s", code, out.String(), errOut.String())
	if code != 0 || !strings.Contains(out.String(), "+    - namespace: shop\n+      name: cart\n+      clusters: [\"c2\", \"c3\"]\n") {
		t.Errorf("exit %d, output %q: want 0 and the diff", code, out.String())
	}
	if log := git("log", "-1", "--format=%s", "--name-only"); log != "clusterset: export shop/cart from c2, c3\n\nclusterset.yaml\n" {
		t.Errorf("last commit %q: want the export of clusterset.yaml alone", log)
	}
	if st := git("status", "--porcelain"); st != "M  README\n" {
		t.Errorf("git status %q: want README still staged and nothing else", st)
	}

	out.Reset()
	errOut.Reset()
	code = cli.Main(root, []string{"unexport", "shop/cart", "-f", file, "--clusters", "c9"}, &errOut)
	data, _ := os.ReadFile(file)
	if code != 1 || !strings.Contains(errOut.String(), "--clusters c9: no cluster c9") || !strings.Contains(string(data), "name: cart") {
		t.Errorf("unexport --clusters c9: exit %d, %q; want 1 naming the flag and the value, the file unchanged", code, errOut.String())
	}
}

// Completion from the file: export offers the services exported from some clusters
// (--clusters widens them), unexport every export, --clusters the file's clusters.
func TestCompletionFromTheFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "clusterset.yaml")
	if err := os.WriteFile(file, []byte(basic), 0o644); err != nil {
		t.Fatal(err)
	}
	root := &cobra.Command{Use: "strait"}
	root.AddCommand(NewExportCommand(), NewUnexportCommand())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "export", "-f", file, ""}, "sample/whereami-cs\n:4\n"},
		{[]string{"__complete", "unexport", "-f", file, ""}, "sample/whereami-cs\nsample/everywhere\n:4\n"},
		{[]string{"__complete", "export", "x/y", "-f", file, "--clusters", ""}, "c1\nc2\nc3\n:4\n"},
	} {
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&bytes.Buffer{})
		_ = cli.Main(root, tc.args, &bytes.Buffer{})
		if out.String() != tc.want {
			t.Errorf("%v: %q, want %q", tc.args[1:], out.String(), tc.want)
		}
	}
}

// readFile is a test file's content; a package whose fixture is missing cannot run.
func readFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(data)
}
