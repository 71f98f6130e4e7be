package gitserver

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/test/require"
)

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		require.Skip(t, "no git on PATH (Debian package git; make host-deps installs it)")
	}
}

// clusterSetDir is a clusterset repository's files as a user keeps them.
func clusterSetDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"kustomization.yaml":      "resources:\n- clusterset.yaml\n",
		"clusterset.yaml":         "kind: ClusterSet\nmetadata:\n  name: lab\n",
		"flux/gitrepository.yaml": "kind: GitRepository\n",
		"flux/kustomization.yaml": "kind: Kustomization\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// serveWith starts srv on a loopback port for the test's lifetime and returns the
// repositories' base URL.
func serveWith(t *testing.T, srv Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve after its context ended: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Serve did not return 10 s after its context ended")
		}
	})
	return "http://" + l.Addr().String()
}

// gitCLI runs git as a person would, with a fixed identity and no host configuration.
func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), isolatedEnv()...)
	cmd.Env = append(cmd.Env, "GIT_AUTHOR_NAME=Person", "GIT_AUTHOR_EMAIL=person@example.com",
		"GIT_COMMITTER_NAME=Person", "GIT_COMMITTER_EMAIL=person@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func remoteHead(t *testing.T, url string) string {
	t.Helper()
	out := gitCLI(t, t.TempDir(), "ls-remote", url, "refs/heads/"+Branch)
	hash, _, ok := strings.Cut(out, "\t")
	if !ok {
		t.Fatalf("git ls-remote %s: no %s in %q", url, Branch, out)
	}
	return hash
}

func TestCloneAndPushOverHTTP(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	root := t.TempDir()
	repo, first, err := Create(ctx, root, "clusterset", clusterSetDir(t), "lab: the basic example", LabAuthor())
	if err != nil {
		t.Fatal(err)
	}
	pushes := make(chan string, 10)
	url := serveWith(t, Server{Root: root, OnPush: func(repo string) { pushes <- repo }}) + "/clusterset.git"

	clone := filepath.Join(t.TempDir(), "clusterset")
	gitCLI(t, "", "clone", "--quiet", url, clone)
	if got := gitCLI(t, clone, "rev-parse", "HEAD"); got != first {
		t.Errorf("the clone's HEAD is %s, want the created commit %s", got, first)
	}
	if got := gitCLI(t, clone, "ls-files"); got != "clusterset.yaml\nflux/gitrepository.yaml\nflux/kustomization.yaml\nkustomization.yaml" {
		t.Errorf("the clone has files\n%s", got)
	}

	// A person's commit, pushed: receive-pack is on.
	if err := os.WriteFile(filepath.Join(clone, "clusterset.yaml"), []byte("kind: ClusterSet\nmetadata:\n  name: lab\nspec: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, clone, "commit", "--quiet", "-am", "add a spec")
	pushed := gitCLI(t, clone, "rev-parse", "HEAD")
	gitCLI(t, clone, "push", "--quiet", "origin", Branch)
	if got := remoteHead(t, url); got != pushed {
		t.Errorf("after the push ls-remote says %s, want %s", got, pushed)
	}
	// The hook ran once, for the push: not for the clone or ls-remote.
	close(pushes)
	var hooked []string
	for r := range pushes {
		hooked = append(hooked, r)
	}
	if len(hooked) != 1 || hooked[0] != "clusterset" {
		t.Errorf("OnPush ran for %q, want once for clusterset", hooked)
	}
	if b, err := repo.File(ctx, pushed, "clusterset.yaml"); err != nil || !strings.Contains(string(b), "spec: {}") {
		t.Errorf("File(%s, clusterset.yaml) = %q, %v; want the pushed content", pushed, b, err)
	}
	if _, err := repo.File(ctx, "--output=/tmp/x", "clusterset.yaml"); err == nil {
		t.Error("File with an option as the revision: no error")
	}

	// The lab's own commit on top of the pushed one, then fetched by the person.
	changed, err := repo.Change(ctx, map[string][]byte{
		"exports.yaml":            []byte("exports: []\n"),
		"flux/gitrepository.yaml": nil,
	}, "export nothing, drop the GitRepository", LabAuthor())
	if err != nil {
		t.Fatal(err)
	}
	if got := remoteHead(t, url); got != changed {
		t.Errorf("after Change ls-remote says %s, want %s", got, changed)
	}
	gitCLI(t, clone, "pull", "--quiet", "--ff-only")
	if got := gitCLI(t, clone, "rev-parse", "HEAD^"); got != pushed {
		t.Errorf("the lab's commit has parent %s, want the pushed %s", got, pushed)
	}
	if _, err := os.Stat(filepath.Join(clone, "flux", "gitrepository.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("flux/gitrepository.yaml after its removal was pulled: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(clone, "exports.yaml")); err != nil || string(b) != "exports: []\n" {
		t.Errorf("exports.yaml = %q, %v", b, err)
	}
}

func TestSameFilesAndAuthorGiveTheSameCommit(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	dir := clusterSetDir(t)
	_, a, err := Create(ctx, t.TempDir(), "clusterset", dir, "lab: the basic example", LabAuthor())
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := Create(ctx, t.TempDir(), "clusterset", dir, "lab: the basic example", LabAuthor())
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("two repositories from the same files: commits %s and %s", a, b)
	}
	later := LabAuthor()
	later.When = later.When.Add(time.Second)
	_, c, err := Create(ctx, t.TempDir(), "clusterset", dir, "lab: the basic example", later)
	if err != nil {
		t.Fatal(err)
	}
	if c == a {
		t.Errorf("another date gave the same commit %s", c)
	}
}

func TestCommitDirReplacesTheWholeTree(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	dir := clusterSetDir(t)
	repo, first, err := Create(ctx, t.TempDir(), "clusterset", dir, "first", LabAuthor())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "flux")); err != nil {
		t.Fatal(err)
	}
	second, err := repo.CommitDir(ctx, dir, "no flux wiring", LabAuthor())
	if err != nil {
		t.Fatal(err)
	}
	if head, err := repo.Head(ctx); err != nil || head != second || second == first {
		t.Errorf("head %s (%v), want the new commit %s (first %s)", head, err, second, first)
	}
	files, err := repo.git(ctx, nil, nil, "ls-tree", "-r", "--name-only", second)
	if err != nil {
		t.Fatal(err)
	}
	if files != "clusterset.yaml\nkustomization.yaml\n" {
		t.Errorf("tree after CommitDir:\n%s", files)
	}
	again, err := repo.CommitDir(ctx, dir, "the same files again", LabAuthor())
	if err != nil || again != second {
		t.Errorf("committing unchanged files gave %s (%v), want the head %s kept", again, err, second)
	}
}

func TestBadInputIsRefusedNamingIt(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	root := t.TempDir()
	dir := clusterSetDir(t)
	repo, _, err := Create(ctx, root, "clusterset", dir, "first", LabAuthor())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		err  error
		want string
	}{
		{"a name with a slash", second(Create(ctx, root, "a/b", dir, "m", LabAuthor())), `"a/b"`},
		{"an existing repository", second(Create(ctx, root, "clusterset", dir, "m", LabAuthor())), "exists already"},
		{"a path leaving the repository", errOf(repo.Change(ctx, map[string][]byte{"../x": {}}, "m", LabAuthor())), `"../x"`},
		{"an empty message", errOf(repo.Change(ctx, map[string][]byte{"x": {}}, " ", LabAuthor())), "empty message"},
		{"no author date", errOf(repo.Change(ctx, map[string][]byte{"x": {}}, "m", Author{Name: "a", Email: "b"})), "no date"},
		{"a file as the directory", errOf(repo.CommitDir(ctx, filepath.Join(dir, "clusterset.yaml"), "m", LabAuthor())), "not a directory"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.what, tc.err, tc.want)
		}
	}
}

func second(_ Repo, _ string, err error) error { return err }

func errOf(_ string, err error) error { return err }
