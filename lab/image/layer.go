package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Epoch is every file's and every image's timestamp: fixed, so a rebuild is
// byte-identical.
func Epoch() time.Time { return time.Unix(0, 0).UTC() }

// Entry is one file, directory or symlink of a layer.
type Entry struct {
	// Path is relative to the image root ("usr/bin/curl"); a leading "/" or "./" is dropped.
	Path string
	// Type is tar.TypeReg, tar.TypeDir or tar.TypeSymlink.
	Type byte
	// Mode holds the permission bits.
	Mode int64
	// Target is a symlink's target.
	Target string
	Data   []byte

	// implicit marks a parent directory Add made up; an explicit one replaces it.
	implicit bool
}

// File is a regular file entry.
func File(p string, mode int64, data []byte) Entry {
	return Entry{Path: p, Type: tar.TypeReg, Mode: mode, Data: data}
}

// Symlink is a symlink entry.
func Symlink(p, target string) Entry {
	return Entry{Path: p, Type: tar.TypeSymlink, Mode: 0o777, Target: target}
}

// Files is a set of layer entries keyed by clean path; adding a path twice keeps the
// first, so the order of sources decides conflicts.
type Files map[string]Entry

// Add puts e in the set unless its path is there already, and adds its missing parent
// directories.
func (f Files) Add(e Entry) error {
	p, err := cleanPath(e.Path)
	if err != nil {
		return err
	}
	if p == "" {
		return nil
	}
	e.Path = p
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if _, ok := f[dir]; !ok {
			f[dir] = Entry{Path: dir, Type: tar.TypeDir, Mode: 0o755, implicit: true}
		}
	}
	if old, ok := f[p]; ok && !old.implicit {
		return nil
	}
	f[p] = e
	return nil
}

func cleanPath(p string) (string, error) {
	c := path.Clean("/" + p)
	if c == "/" {
		return "", nil
	}
	if strings.Contains(p, "\x00") {
		return "", fmt.Errorf("layer path %q: contains NUL", p)
	}
	return strings.TrimPrefix(c, "/"), nil
}

// Tar writes the set as an uncompressed tar: entries sorted by path, owner root, time
// Epoch, no user or group names.
func (f Files) Tar() ([]byte, error) {
	paths := make([]string, 0, len(f))
	for p := range f {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		e := f[p]
		h := &tar.Header{Name: p, Typeflag: e.Type, Mode: e.Mode, ModTime: Epoch(), Format: tar.FormatPAX}
		switch e.Type {
		case tar.TypeDir:
			h.Name += "/"
		case tar.TypeSymlink:
			h.Linkname = e.Target
		case tar.TypeReg:
			h.Size = int64(len(e.Data))
		default:
			return nil, fmt.Errorf("layer path %s: unsupported type %q", p, e.Type)
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer path %s: %w", p, err)
		}
		if e.Type == tar.TypeReg {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, fmt.Errorf("layer path %s: %w", p, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Layer is the set as an uncompressed image layer: the images never cross a network, and
// every node's import would spend most of its time decompressing.
func (f Files) Layer() (v1.Layer, error) {
	data, err := f.Tar()
	if err != nil {
		return nil, err
	}
	return static.NewLayer(data, types.DockerUncompressedLayer), nil
}
