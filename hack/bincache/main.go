package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// keep is how many entries of one name stay in the cache: the one in use and the one
// before it (a branch switched back to finds its programs).
const keep = 2

// completeMark is the file an entry holds once every program is in it.
const completeMark = ".complete"

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type options struct {
	name, out string
	files     []string
	keyFiles  []string
	command   []string
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bincache:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	var o options
	var files string
	var keys stringList
	fs := flag.NewFlagSet("bincache", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.name, "name", "", "the programs' name in the cache (k8s, flux, ...)")
	fs.StringVar(&o.out, "out", "", "the directory the command builds the programs into")
	fs.StringVar(&files, "files", "", "the programs the command builds, space-separated, relative to -out")
	fs.Var(&keys, "key", "a file the programs are built from (go.mod, go.sum, a version file); repeated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.files, o.keyFiles, o.command = strings.Fields(files), keys, fs.Args()
	if err := o.check(); err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	toolchain, err := goToolchain()
	if err != nil {
		return err
	}
	contents := make(map[string][]byte, len(o.keyFiles))
	for _, f := range o.keyFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("-key %s: %w", f, err)
		}
		contents[f] = b
	}
	key := cacheKey(o, wd, toolchain, contents)
	dir := cacheDir()
	if dir == "" {
		return build(o, stdout, stderr)
	}
	entry := filepath.Join(dir, o.name+"-"+key)
	if hit(entry) {
		if err := copyFiles(entry, o.out, o.files); err != nil {
			return err
		}
		now := time.Now()
		_ = os.Chtimes(entry, now, now)
		fmt.Fprintf(stdout, "bincache: %s (%s) from %s\n", o.name, strings.Join(o.files, " "), entry)
		return nil
	}
	if err := build(o, stdout, stderr); err != nil {
		return err
	}
	if err := store(dir, entry, o); err != nil {
		// The programs are built: a cache that cannot take them costs the next run time,
		// not this one its result.
		fmt.Fprintf(stderr, "bincache: not stored: %v\n", err)
	}
	prune(dir, o.name, keep)
	return nil
}

func (o options) check() error {
	switch {
	case o.name == "" || strings.ContainsAny(o.name, "/ "):
		return fmt.Errorf("-name %q: want a name without slashes or spaces", o.name)
	case o.out == "":
		return errors.New("-out: the output directory is required")
	case len(o.files) == 0:
		return errors.New("-files: name at least one program the command builds")
	case len(o.command) == 0:
		return errors.New("no command after --")
	}
	for _, f := range o.files {
		if filepath.IsAbs(f) || strings.HasPrefix(filepath.Clean(f), "..") {
			return fmt.Errorf("-files %q: want a path inside -out", f)
		}
	}
	return nil
}

// cacheKey hashes what the programs are built from. The output and working directories
// are placeholders in the command, so that every clone of the repository shares the entry.
func cacheKey(o options, wd, toolchain string, keyFiles map[string][]byte) string {
	h := sha256.New()
	field := func(s string) { fmt.Fprintf(h, "%d:%s\n", len(s), s) }
	field(o.name)
	field(toolchain)
	out, _ := filepath.Abs(o.out)
	for _, a := range o.command {
		field(placeholders(a, out, wd))
	}
	field(strings.Join(o.files, " "))
	names := make([]string, 0, len(keyFiles))
	for f := range keyFiles {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		field(placeholders(f, out, wd))
		field(string(keyFiles[f]))
	}
	return hex.EncodeToString(h.Sum(nil))[:20]
}

// placeholders writes the output directory as @OUT@ and the working directory as @WD@
// (the output first: it is usually inside the working directory).
func placeholders(s, out, wd string) string {
	s = strings.ReplaceAll(s, out, "@OUT@")
	return strings.ReplaceAll(s, wd, "@WD@")
}

// goToolchain is what the programs' bytes depend on beyond their sources.
func goToolchain() (string, error) {
	out, err := exec.Command("go", "env", "GOVERSION", "GOOS", "GOARCH", "GOTOOLCHAIN").Output()
	if err != nil {
		return "", fmt.Errorf("go env: %w", err)
	}
	return strings.Join(strings.Fields(string(out)), " "), nil
}

func cacheDir() string {
	switch v := os.Getenv("STRAIT_BIN_CACHE"); v {
	case "off":
		return ""
	case "":
	default:
		return v
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "strait", "bin")
}

func hit(entry string) bool {
	_, err := os.Stat(filepath.Join(entry, completeMark))
	return err == nil
}

func build(o options, stdout, stderr io.Writer) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	cmd := exec.Command(o.command[0], o.command[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(o.command, " "), err)
	}
	for _, f := range o.files {
		if _, err := os.Stat(filepath.Join(o.out, f)); err != nil {
			return fmt.Errorf("the command did not build %s: %w", f, err)
		}
	}
	return nil
}

// store copies the programs into a new directory beside the entry and renames it into
// place: an entry is whole or absent, also when two builds store the same key at once.
func store(dir, entry string, o options) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, ".tmp-"+o.name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := copyFiles(o.out, tmp, o.files); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, completeMark), nil, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, entry); err != nil && !hit(entry) {
		return err
	}
	return nil
}

func copyFiles(from, to string, files []string) error {
	for _, f := range files {
		if err := copyFile(filepath.Join(from, f), filepath.Join(to, f)); err != nil {
			return err
		}
	}
	return nil
}

// copyFile writes dst through a temporary file renamed into place: a program that is
// running (a lab's kube-apiserver) is replaced, not written into.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

// prune removes all but the n most recently used entries of name (a hit touches its
// entry), and temporary directories a killed build left more than an hour ago.
func prune(dir, name string, n int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type used struct {
		path string
		at   time.Time
	}
	var mine []used
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), ".tmp-") && time.Since(info.ModTime()) > time.Hour:
			_ = os.RemoveAll(p)
		case strings.HasPrefix(e.Name(), name+"-") && len(e.Name()) == len(name)+1+20:
			mine = append(mine, used{p, info.ModTime()})
		}
	}
	sort.Slice(mine, func(i, j int) bool { return mine[i].at.After(mine[j].at) })
	for i := n; i < len(mine); i++ {
		_ = os.RemoveAll(mine[i].path)
	}
}
