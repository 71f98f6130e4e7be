package flux

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

// The image as a node's containerd would run it: the ref the Deployment names, the
// binary as the entrypoint, a numeric non-root user (the Deployment says runAsNonRoot),
// a writable /tmp, and labels saying what and which version it is.
func TestControllerImageRunsTheBinaryAsNobody(t *testing.T) {
	r := Release{Version: "v1.9.6", Sources: map[string]string{SourceController: "/src", KustomizeController: "/kc"}}
	binary := []byte("\x7fELF a stand-in for the controller")
	spec, err := r.ImageSpec(SourceController, binary)
	if err != nil {
		t.Fatal(err)
	}
	path, _, err := spec.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "source-controller.tar" {
		t.Errorf("image file %s, want source-controller.tar", path)
	}
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(path) })
	if err != nil || len(m) != 1 || !slices.Equal(m[0].RepoTags, []string{"strait-lab/source-controller:v1.9.6"}) {
		t.Errorf("tarball manifest %+v (%v), want the tag strait-lab/source-controller:v1.9.6", m, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/source-controller"}) || cfg.Config.User != "65534:65534" {
		t.Errorf("entrypoint %v user %q, want [/source-controller] as 65534:65534", cfg.Config.Entrypoint, cfg.Config.User)
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.title":   "source-controller",
		"org.opencontainers.image.version": "v1.9.6",
		"org.opencontainers.image.source":  "github.com/fluxcd/source-controller",
	} {
		if cfg.Config.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, cfg.Config.Labels[k], v)
		}
	}
	files := imageFiles(t, img)
	if f, ok := files["source-controller"]; !ok || !bytes.Equal(f.data, binary) || f.mode&0o111 == 0 {
		t.Errorf("/source-controller in the image: %v, want the binary, executable", ok)
	}
	if f, ok := files["tmp/"]; !ok || f.mode&0o1777 != 0o1777 {
		t.Errorf("/tmp in the image: %v mode %o, want a sticky world-writable directory", ok, f.mode)
	}
	if f := files["etc/passwd"]; !strings.Contains(string(f.data), ":65534:65534:") {
		t.Errorf("/etc/passwd has no user 65534:\n%s", f.data)
	}

	if _, err := r.ImageSpec("helm-controller", binary); err == nil || !strings.Contains(err.Error(), `"helm-controller"`) {
		t.Errorf("an image of helm-controller: error %v, want one naming it", err)
	}
	if _, err := r.ImageSpec(KustomizeController, nil); err == nil || !strings.Contains(err.Error(), "empty binary") {
		t.Errorf("an image without a binary: error %v", err)
	}
}

type imageFile struct {
	mode int64
	data []byte
}

// imageFiles is the image's file system: every layer's entries, upper layers winning.
func imageFiles(t *testing.T, img v1.Image) map[string]imageFile {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]imageFile{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = imageFile{mode: h.Mode, data: data}
		}
		_ = rc.Close()
	}
	return files
}

// The Deployments pass flags the built binaries know: a flag Flux renamed would crash
// the pod at start, long after the install was applied.
func TestDeploymentArgsAreFlagsOfTheBuiltBinaries(t *testing.T) {
	r := pinned(t)
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := r.Objects()
	if err != nil {
		t.Fatal(err)
	}
	deployments := byKind(objs, "Deployment")
	for _, c := range Controllers() {
		bin := filepath.Join(root, "bin", "flux", r.Version, c)
		if _, err := os.Stat(bin); errors.Is(err, os.ErrNotExist) {
			require.Skip(t, "no %s: run make flux-binaries", bin)
		}
		// pflag prints the usage on stderr and exits 0 for --help.
		out, err := exec.Command(bin, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("%s --help: %v\n%s", bin, err, out)
		}
		containers, _, _ := unstructured.NestedSlice(deployments[c].Object, "spec", "template", "spec", "containers")
		args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
		if len(args) == 0 {
			t.Fatalf("Deployment %s has no args", c)
		}
		for _, a := range args {
			flag, _, _ := strings.Cut(a, "=")
			if !strings.Contains(string(out), "  "+flag+" ") && !strings.Contains(string(out), ", "+flag+" ") {
				t.Errorf("%s: the Deployment passes %s, which %s --help does not list", c, flag, c)
			}
		}
	}
}
