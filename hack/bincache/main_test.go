package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clone is a checkout of its own with a go.sum the programs are keyed on, and a build
// command that counts its runs in the test's directory.
type clone struct {
	t            *testing.T
	root, counts string
}

func newClone(t *testing.T, counts, goSum string) clone {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.sum"), []byte(goSum), 0o644); err != nil {
		t.Fatal(err)
	}
	return clone{t, root, counts}
}

// build runs bincache in the clone as make does, and returns what the program holds.
func (c clone) build(extra ...string) (string, error) {
	c.t.Helper()
	out := filepath.Join(c.root, "bin", "k8s")
	script := `echo run >> "$0" && mkdir -p "$1/sub" && cat go.sum > "$1/apiserver" && echo etcd > "$1/sub/etcd" && chmod 755 "$1/apiserver"`
	args := append([]string{"-name", "k8s", "-out", out, "-files", "apiserver sub/etcd", "-key", "go.sum"}, extra...)
	args = append(args, "--", "sh", "-c", script, c.counts, out)
	wd, _ := os.Getwd()
	if err := os.Chdir(c.root); err != nil {
		c.t.Fatal(err)
	}
	defer func() { _ = os.Chdir(wd) }()
	if err := run(args, io.Discard, io.Discard); err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(out, "apiserver"))
	if err != nil {
		c.t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(out, "apiserver"))
	if err != nil || info.Mode().Perm() != 0o755 {
		c.t.Fatalf("apiserver's mode: %v %v, want 0755", info.Mode(), err)
	}
	return string(b), nil
}

func runs(t *testing.T, counts string) int {
	t.Helper()
	b, err := os.ReadFile(counts)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run")
}

func TestASecondCloneCopiesWhatTheFirstBuilt(t *testing.T) {
	t.Setenv("STRAIT_BIN_CACHE", t.TempDir())
	counts := filepath.Join(t.TempDir(), "runs")
	a, b := newClone(t, counts, "v1.36.0 h1:abc"), newClone(t, counts, "v1.36.0 h1:abc")
	for i, c := range []clone{a, a, b} {
		got, err := c.build()
		if err != nil || got != "v1.36.0 h1:abc" {
			t.Fatalf("build %d: %q, %v", i, got, err)
		}
	}
	if n := runs(t, counts); n != 1 {
		t.Errorf("the command ran %d times for three builds of the same sources in two clones, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(b.root, "bin", "k8s", "sub", "etcd")); err != nil {
		t.Errorf("the second clone lacks a program of the entry: %v", err)
	}
}

func TestChangedSourcesBuildAgain(t *testing.T) {
	t.Setenv("STRAIT_BIN_CACHE", t.TempDir())
	counts := filepath.Join(t.TempDir(), "runs")
	if _, err := newClone(t, counts, "v1.36.0").build(); err != nil {
		t.Fatal(err)
	}
	got, err := newClone(t, counts, "v1.36.1").build()
	if err != nil || got != "v1.36.1" {
		t.Fatalf("after go.sum changed: %q, %v; want the program built from v1.36.1", got, err)
	}
	if _, err := newClone(t, counts, "v1.36.0").build(); err != nil {
		t.Fatal(err)
	}
	if n := runs(t, counts); n != 2 {
		t.Errorf("the command ran %d times for two versions and one repeat, want 2", n)
	}
}

func TestAFailedBuildStoresNothing(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("STRAIT_BIN_CACHE", cache)
	root := t.TempDir()
	err := run([]string{"-name", "k8s", "-out", filepath.Join(root, "out"), "-files", "apiserver", "--",
		"sh", "-c", "exit 3"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("a failing command: %v, want its exit status", err)
	}
	err = run([]string{"-name", "k8s", "-out", filepath.Join(root, "out"), "-files", "apiserver", "--", "true"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "did not build apiserver") {
		t.Fatalf("a command that built nothing: %v, want the missing program named", err)
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("the cache holds %d entries after failed builds, want none", len(ents))
	}
}

func TestOffBuildsEveryTime(t *testing.T) {
	t.Setenv("STRAIT_BIN_CACHE", "off")
	counts := filepath.Join(t.TempDir(), "runs")
	c := newClone(t, counts, "x")
	for range 2 {
		if _, err := c.build(); err != nil {
			t.Fatal(err)
		}
	}
	if n := runs(t, counts); n != 2 {
		t.Errorf("STRAIT_BIN_CACHE=off: the command ran %d times in two builds, want 2", n)
	}
}

func TestPruneKeepsTheTwoLastUsed(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("STRAIT_BIN_CACHE", cache)
	counts := filepath.Join(t.TempDir(), "runs")
	for _, v := range []string{"a", "b", "c"} {
		if _, err := newClone(t, counts, v).build(); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != keep {
		t.Errorf("the cache holds %v after three versions, want the %d last", names, keep)
	}
	if got, err := newClone(t, counts, "c").build(); err != nil || got != "c" || runs(t, counts) != 3 {
		t.Errorf("the last version was pruned: %q %v, %d runs", got, err, runs(t, counts))
	}
}

func TestBadUsageNamesTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-out", "x", "-files", "a", "--", "true"}, "-name"},
		{[]string{"-name", "k8s", "-files", "a", "--", "true"}, "-out"},
		{[]string{"-name", "k8s", "-out", "x", "--", "true"}, "-files"},
		{[]string{"-name", "k8s", "-out", "x", "-files", "../a", "--", "true"}, "inside -out"},
		{[]string{"-name", "k8s", "-out", "x", "-files", "a"}, "no command"},
	} {
		err := run(tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bincache %s: %v, want an error naming %s", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
