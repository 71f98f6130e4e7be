package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/strongswan/govici/vici"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/image"
	"github.com/straitnet/strait/nodeagent/cable/ipsec"
	"github.com/straitnet/strait/test/require"
)

// unpack flattens the image in the tarball at path into a fresh directory, the way a
// container runtime lays out its root filesystem, and returns the directory. Writing
// through os.Root keeps every entry inside it whatever the image's symlinks say.
func unpack(t *testing.T, tarPath, ref string) string {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(tarPath, &tag)
	if err != nil {
		t.Fatalf("read %s: %v", tarPath, err)
	}
	// Not t.TempDir(): the VICI socket's path inside must stay under the 108 bytes of
	// a unix socket address.
	dir, err := os.MkdirTemp("", "strait-rootfs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	flat := mutate.Extract(img)
	defer flat.Close()
	tr := tar.NewReader(flat)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatalf("%s: %v", tarPath, err)
		}
		if err := writeEntry(root, h, tr); err != nil {
			t.Fatalf("%s: %s: %v", tarPath, h.Name, err)
		}
	}
}

func writeEntry(root *os.Root, h *tar.Header, r io.Reader) error {
	p := path.Clean(h.Name)
	mode := fs.FileMode(h.Mode) & fs.ModePerm
	if h.Mode&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	if dir := path.Dir(p); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := root.MkdirAll(p, 0o755); err != nil {
			return err
		}
		return root.Chmod(p, mode|fs.ModeDir)
	case tar.TypeSymlink:
		return root.Symlink(h.Linkname, p)
	case tar.TypeLink:
		return root.Link(path.Clean(h.Linkname), p)
	case tar.TypeReg:
		f, err := root.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		return root.Chmod(p, mode)
	default:
		return fmt.Errorf("unexpected tar entry type %q", h.Typeflag)
	}
}

// runtimeScript gives the unpacked root what a container runtime gives a container (a
// /proc, a /dev with the usual devices and /dev/net/tun as the agent's manifest mounts
// it, an empty /run as the manifest's emptyDir) in a private mount namespace, so all of
// it goes when the last process in it exits, then runs "$@" chrooted into it: only the
// image's own files are there.
const runtimeScript = `set -e
root=$1; shift
mkdir -p "$root/proc" "$root/dev"
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=755,size=64k strait-dev "$root/dev"
for d in null zero full random urandom; do
  : >"$root/dev/$d"; mount --bind "/dev/$d" "$root/dev/$d"
done
if [ -c /dev/net/tun ]; then
  mkdir "$root/dev/net"; : >"$root/dev/net/tun"; mount --bind /dev/net/tun "$root/dev/net/tun"
fi
mount -t tmpfs -o mode=755,size=1m strait-run "$root/run"
exec chroot "$root" "$@"`

// inRootfs is argv run from the unpacked image at root, inside the named network
// namespace unless ns is "". Every tool before the chroot execs the next, so the
// command's pid is argv's own; the environment is only the image's PATH.
func inRootfs(ns, root string, argv ...string) *exec.Cmd {
	args := append([]string{"unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", runtimeScript, "sh", root}, argv...)
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = []string{image.DefaultPath}
	cmd.Dir = "/"
	return cmd
}

// testCharonSidecar runs the charon image's sidecar as the agent's manifest does
// (kustomize/member/workloads/agent.yaml), with --libipsec as on kernels without ESP, in
// a network namespace of its own, and checks what the agent relies on: the VICI socket
// answering as charon, every plugin of Strait's strongswan.conf loaded (a library
// missing from the image makes charon skip its plugin), libipsec's TUN, and on SIGTERM a
// clean stop that removes the socket and the conf.
func testCharonSidecar(t *testing.T, img built) {
	root := unpack(t, img.path, img.spec.Ref)
	ns := netns.New(t, "charon")
	const dir = ipsec.DefaultCharonDir
	logPath := filepath.Join(t.TempDir(), "charon.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := inRootfs(ns.Name, root, "/straitd", "charon", "--dir="+dir, "--port=4501", "--private-run=false", "--libipsec")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); _ = log.Close() }()
	exited := false
	t.Cleanup(func() {
		if !exited {
			// The whole process group: straitd and the charon it started.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("straitd charon's output:\n%s", out)
		}
	})

	sidecar := ipsec.Charon{Dir: filepath.Join(root, dir)}
	require.Eventually(t, 15*time.Second, "charon opens its VICI socket", func() error {
		select {
		case err := <-done:
			exited = true
			t.Fatalf("straitd charon exited: %v", err)
		default:
		}
		_, err := os.Stat(sidecar.VICISocket())
		return err
	})
	s, err := vici.NewSession(vici.WithSocketPath(sidecar.VICISocket()))
	if err != nil {
		t.Fatalf("VICI session: %v", err)
	}
	m, err := s.Call(context.Background(), "version", nil)
	_ = s.Close()
	if err != nil {
		t.Fatalf("VICI version: %v", err)
	}
	if daemon := m.Get("daemon"); daemon != "charon" {
		t.Errorf("VICI version: daemon %v, want charon", daemon)
	}

	out, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	loaded := loadedPlugins(out)
	for _, p := range wantedPlugins(t) {
		if !slices.Contains(loaded, p) {
			t.Errorf("plugin %s not loaded; charon loaded %v", p, loaded)
		}
	}
	if _, err := ns.NL.LinkByName("ipsec0"); err != nil {
		t.Errorf("libipsec's TUN ipsec0 in the sidecar's namespace: %v", err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Errorf("straitd charon after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("straitd charon did not stop within 15 s of SIGTERM")
	}
	for _, p := range []string{sidecar.VICISocket(), sidecar.ConfPath()} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after the stop, %s is still there (%v)", p, err)
		}
	}
}

// wantedPlugins is the load list of the strongswan.conf that straitd charon --libipsec
// writes.
func wantedPlugins(t *testing.T) []string {
	t.Helper()
	conf, err := ipsec.Charon{Dir: ipsec.DefaultCharonDir, Libipsec: true}.Conf()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(conf) {
		if _, list, ok := strings.Cut(strings.TrimSpace(line), "load = "); ok {
			return strings.Fields(list)
		}
	}
	t.Fatalf("no load line in charon's strongswan.conf:\n%s", conf)
	return nil
}
