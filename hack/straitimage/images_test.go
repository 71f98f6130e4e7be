package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/straitnet/strait/lab/image"
	"github.com/straitnet/strait/test/require"
)

// testBuild is what the tests build: a version and a revision no real build has, so the
// tests see them come back from the image and not from the tree.
func testBuild(t *testing.T) Build {
	t.Helper()
	module, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The Makefile's download cache, shared with make image and make images.
	cache := filepath.Join(module, "bin", "cache", "debs")
	return Build{Module: module, Version: "v0.0.0-test", Revision: "0123abc-dirty", Debian: image.Debian{Cache: cache}}
}

// built is one image written by writeImages.
type built struct {
	spec   image.Spec
	path   string
	digest v1.Hash
}

// writeImages builds both images into dir, the way make image does.
func writeImages(t *testing.T, b Build, dir string) map[string]built {
	t.Helper()
	specs, err := Specs(context.Background(), b)
	if err != nil {
		require.Skip(t, "building the images (go build, apt-cache, apt-get download): %v", err)
	}
	out := map[string]built{}
	for _, s := range specs {
		path, digest, err := s.Write(dir)
		if err != nil {
			t.Fatal(err)
		}
		repo := strings.SplitN(s.Ref, ":", 2)[0]
		out[repo] = built{spec: s, path: path, digest: digest}
	}
	return out
}

func TestBadVersionOrRevisionIsRefusedByName(t *testing.T) {
	for _, tc := range []struct {
		b    Build
		want string
	}{
		{Build{Version: ""}, `version ""`},
		{Build{Version: "v1 beta"}, `version "v1 beta"`},
		{Build{Version: "-v1"}, `version "-v1"`},
		{Build{Version: "dev", Revision: "abc -X main.x=y"}, `revision "abc -X main.x=y"`},
	} {
		_, err := Specs(context.Background(), tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Specs(%+v) = %v, want an error naming %s", tc.b, err, tc.want)
		}
	}
}

// TestImages builds both images once (about 15 s with warm caches) and checks them as a
// user would: rebuilt, they are the same bytes; their config says what they are; their
// entrypoints run from the image's own files alone.
func TestImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds straitd and unpacks Debian packages")
	}
	for _, tool := range []string{"go", "apt-cache", "apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			require.Skip(t, "building the images needs %s: %v", tool, err)
		}
	}
	b := testBuild(t)
	images := writeImages(t, b, t.TempDir())

	t.Run("the same sources give the same digests and tarballs", func(t *testing.T) {
		again := writeImages(t, b, t.TempDir())
		for repo, first := range images {
			second := again[repo]
			if first.digest != second.digest {
				t.Errorf("%s: digest %s, rebuilt %s", repo, first.digest, second.digest)
			}
			if a, b := fileSum(t, first.path), fileSum(t, second.path); a != b {
				t.Errorf("%s: tarball sha256 %x, rebuilt %x", repo, a, b)
			}
		}
	})

	t.Run("each image says its version, revision and source and runs /straitd", func(t *testing.T) {
		for _, repo := range []string{StraitdRepo, CharonRepo} {
			cfg := configOf(t, images[repo])
			for label, want := range map[string]string{
				"org.opencontainers.image.version":  b.Version,
				"org.opencontainers.image.revision": b.Revision,
				"org.opencontainers.image.source":   Source,
			} {
				if got := cfg.Config.Labels[label]; got != want {
					t.Errorf("%s: label %s = %q, want %q", repo, label, got, want)
				}
			}
			if got := strings.Join(cfg.Config.Entrypoint, " "); got != "/straitd" {
				t.Errorf("%s: entrypoint %q, want /straitd", repo, got)
			}
		}
	})

	t.Run("the charon image lists its Debian packages for scanners", func(t *testing.T) {
		root := unpack(t, images[CharonRepo].path, images[CharonRepo].spec.Ref)
		for _, pkg := range charonPackages() {
			record, err := os.ReadFile(filepath.Join(root, "var/lib/dpkg/status.d", pkg))
			if err != nil {
				t.Errorf("no dpkg record of %s: %v", pkg, err)
				continue
			}
			if !strings.HasPrefix(string(record), "Package: "+pkg+"\nStatus: install ok installed\n") ||
				!strings.Contains(string(record), "\nVersion: ") {
				t.Errorf("dpkg record of %s:\n%s", pkg, record)
			}
		}
	})

	t.Run("straitd version runs in both images", func(t *testing.T) {
		require.Root(t, "unshare", "chroot", "mount")
		want := "straitd " + b.Version + " (revision " + b.Revision + ", " + runtime.Version() + ")"
		for _, repo := range []string{StraitdRepo, CharonRepo} {
			root := unpack(t, images[repo].path, images[repo].spec.Ref)
			out, err := inRootfs("", root, "/straitd", "version").CombinedOutput()
			if err != nil {
				t.Fatalf("%s: straitd version: %v: %s", repo, err, out)
			}
			if got := strings.TrimSpace(string(out)); got != want {
				t.Errorf("%s: straitd version printed %q, want %q", repo, got, want)
			}
		}
	})

	t.Run("straitd charon starts charon with its plugins and VICI socket", func(t *testing.T) {
		require.Root(t, "unshare", "chroot", "mount")
		testCharonSidecar(t, images[CharonRepo])
	})
}

func configOf(t *testing.T, img built) *v1.ConfigFile {
	t.Helper()
	tag, err := name.NewTag(img.spec.Ref)
	if err != nil {
		t.Fatal(err)
	}
	i, err := tarball.ImageFromPath(img.path, &tag)
	if err != nil {
		t.Fatalf("read %s: %v", img.path, err)
	}
	cfg, err := i.ConfigFile()
	if err != nil {
		t.Fatalf("config of %s: %v", img.path, err)
	}
	return cfg
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// loadedPlugins is the plugin list of charon's "loaded plugins: ..." log line, or nil.
func loadedPlugins(log []byte) []string {
	for line := range bytes.Lines(log) {
		if _, list, ok := strings.Cut(string(line), "loaded plugins: "); ok {
			return strings.Fields(list)
		}
	}
	return nil
}
