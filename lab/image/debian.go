package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// notNeeded says whether a package is one a Debian system needs to install or configure
// packages, never to run them: the dependency walk stops there.
func notNeeded(pkg string) bool {
	switch pkg {
	case "adduser", "base-files", "cdebconf", "debconf", "debconf-2.0", "dpkg",
		"init-system-helpers", "install-info", "lsb-base", "passwd", "perl", "perl-base",
		"sensible-utils", "tar", "usr-is-merged", "usrmerge":
		return true
	}
	return strings.HasPrefix(pkg, "perl-modules-")
}

// skipped says whether a package's path is one nobody runs in a container:
// documentation, manuals, translations.
func skipped(name string) bool {
	for _, s := range []string{"usr/share/doc/", "usr/share/man/", "usr/share/info/",
		"usr/share/locale/", "usr/share/lintian/", "usr/share/bug/"} {
		if strings.HasPrefix(name+"/", s) {
			return true
		}
	}
	return false
}

// Debian downloads and unpacks Debian packages for image layers, without installing them.
type Debian struct {
	// Cache holds the downloaded .deb files; a file already there is not fetched again.
	Cache string
}

// Closure is pkgs and everything they depend on (Depends and Pre-Depends, the first of
// each alternative, a virtual package's first provider), without the packages only
// package management needs. Sorted.
func (d Debian) Closure(ctx context.Context, pkgs []string) ([]string, error) {
	seen := map[string]bool{}
	frontier := append([]string(nil), pkgs...)
	for len(frontier) > 0 {
		var next []string
		deps, err := directDepends(ctx, frontier)
		for _, p := range frontier {
			seen[p] = true
		}
		if err != nil {
			return nil, err
		}
		for _, dep := range deps {
			if !seen[dep] && !notNeeded(dep) {
				seen[dep] = true
				next = append(next, dep)
			}
		}
		frontier = next
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// directDepends asks apt-cache for the direct dependencies of pkgs.
func directDepends(ctx context.Context, pkgs []string) ([]string, error) {
	args := append([]string{"depends", "--important", "--no-recommends", "--no-suggests"}, pkgs...)
	out, err := run(ctx, "apt-cache", args...)
	if err != nil {
		return nil, err
	}
	return parseDepends(out), nil
}

// parseDepends reads `apt-cache depends` output: per package, lines "  Depends: x",
// " |Depends: x" (x or the next line's), "  Depends: <virtual>" followed by its
// providers indented by four spaces.
func parseDepends(out []byte) []string {
	var deps []string
	alternative, virtual := false, false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "    ") {
			if virtual {
				if p := strings.TrimSpace(line); !notNeeded(p) {
					deps = append(deps, p)
				}
				virtual = false
			}
			continue
		}
		virtual = false
		field, value, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		taken := alternative
		alternative = strings.HasPrefix(field, "|")
		field = strings.TrimPrefix(field, "|")
		if (field != "Depends" && field != "PreDepends") || taken {
			continue
		}
		if strings.HasPrefix(value, "<") {
			virtual = !notNeeded(strings.Trim(value, "<>")) && !strings.Contains(value, ":any")
			continue
		}
		deps = append(deps, value)
	}
	return deps
}

// Download fetches every package into the cache (unless there already) and returns the
// .deb paths in pkgs' order.
func (d Debian) Download(ctx context.Context, pkgs []string) ([]string, error) {
	if err := os.MkdirAll(d.Cache, 0o755); err != nil {
		return nil, err
	}
	paths := make([]string, len(pkgs))
	var missing []string
	for i, p := range pkgs {
		if paths[i] = d.cached(p); paths[i] == "" {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		cmd := exec.CommandContext(ctx, "apt-get", append([]string{"download", "-q"}, missing...)...)
		cmd.Dir = d.Cache
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("apt-get download %s: %w: %s (are the package lists there? run apt-get update)",
				strings.Join(missing, " "), err, lastLines(out, 5))
		}
	}
	for i, p := range pkgs {
		if paths[i] == "" {
			if paths[i] = d.cached(p); paths[i] == "" {
				return nil, fmt.Errorf("package %s: no .deb in %s after apt-get download", p, d.Cache)
			}
		}
	}
	return paths, nil
}

// cached is the newest .deb of pkg in the cache, or "".
func (d Debian) cached(pkg string) string {
	matches, _ := filepath.Glob(filepath.Join(d.Cache, pkg+"_*.deb"))
	if len(matches) == 0 {
		return ""
	}
	sort.Strings(matches)
	return matches[len(matches)-1]
}

// Files downloads the closure of pkgs and unpacks every package's files into one set,
// leaving out documentation. The same .deb files give the same set.
func (d Debian) Files(ctx context.Context, pkgs []string) (Files, error) {
	closure, err := d.Closure(ctx, pkgs)
	if err != nil {
		return nil, err
	}
	debs, err := d.Download(ctx, closure)
	if err != nil {
		return nil, err
	}
	files := Files{}
	for _, deb := range debs {
		if err := addDeb(ctx, files, deb); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// addDeb adds the files of one .deb, hard links copied as regular files.
func addDeb(ctx context.Context, files Files, deb string) error {
	data, err := run(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	if err != nil {
		return err
	}
	tr := tar.NewReader(bytes.NewReader(data))
	regular := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(deb), err)
		}
		name, _ := cleanPath(h.Name)
		if skipped(name) {
			continue
		}
		e := Entry{Path: name, Mode: h.Mode & 0o7777}
		switch h.Typeflag {
		case tar.TypeDir:
			e.Type = tar.TypeDir
		case tar.TypeSymlink:
			e.Type, e.Target = tar.TypeSymlink, h.Linkname
		case tar.TypeReg:
			e.Type = tar.TypeReg
			if e.Data, err = io.ReadAll(tr); err != nil {
				return fmt.Errorf("%s: %s: %w", filepath.Base(deb), name, err)
			}
			regular[name] = e.Data
		case tar.TypeLink:
			target, _ := cleanPath(h.Linkname)
			e.Type, e.Data = tar.TypeReg, regular[target]
		default:
			continue
		}
		if err := files.Add(e); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(deb), err)
		}
	}
}

func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, lastLines(stderr.Bytes(), 5))
	}
	return out, nil
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
