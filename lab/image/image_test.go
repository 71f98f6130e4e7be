package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/straitnet/strait/test/require"
)

func sampleSpec() Spec {
	f := BaseFiles()
	_ = f.Add(File("bin/hello", 0o755, []byte("#!/bin/sh\necho hello\n")))
	_ = f.Add(Symlink("usr/bin/hi", "/bin/hello"))
	return Spec{Ref: "strait-lab/sample:dev", Layers: []Files{f}, Entrypoint: []string{"/bin/hello"}}
}

func TestSameInputsGiveTheSameImageAndTarball(t *testing.T) {
	dir1, dir2 := t.TempDir(), t.TempDir()
	p1, d1, err := sampleSpec().Write(dir1)
	if err != nil {
		t.Fatal(err)
	}
	p2, d2, err := sampleSpec().Write(dir2)
	if err != nil {
		t.Fatal(err)
	}
	if d1 != d2 {
		t.Errorf("image digests differ: %s vs %s", d1, d2)
	}
	if a, b := fileHash(t, p1), fileHash(t, p2); a != b {
		t.Errorf("tarballs differ: %x vs %x", a, b)
	}
	other := sampleSpec()
	_ = other.Layers[0].Add(File("etc/extra", 0o644, []byte("x")))
	if _, d3, err := other.Write(t.TempDir()); err != nil || d3 == d1 {
		t.Errorf("a different file gave the same digest %s (err %v)", d3, err)
	}
}

func TestLayerIsSortedOwnedByRootAtEpochWithParents(t *testing.T) {
	f := Files{}
	_ = f.Add(File("/usr/bin/z", 0o755, []byte("z")))
	_ = f.Add(File("./etc/a", 0o644, []byte("a")))
	_ = f.Add(File("usr/bin/z", 0o644, []byte("second")))
	data, err := f.Tar()
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(data))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || !h.ModTime.Equal(Epoch()) {
			t.Errorf("%s: uid %d gid %d uname %q time %s", h.Name, h.Uid, h.Gid, h.Uname, h.ModTime)
		}
		if h.Name == "usr/bin/z" {
			if b, _ := io.ReadAll(tr); string(b) != "z" {
				t.Errorf("usr/bin/z = %q, want the first one added", b)
			}
		}
	}
	want := []string{"etc/", "etc/a", "usr/", "usr/bin/", "usr/bin/z"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("entries %v, want %v", names, want)
	}
}

func TestParseDependsTakesFirstAlternativeAndProviders(t *testing.T) {
	out := []byte(`curl
  Depends: libc6
 |Depends: libcurl4
  Depends: libcurl3-gnutls
  Depends: <debconf-2.0>
    cdebconf
    debconf
  Depends: <libssl>
    libssl3
  PreDepends: zlib1g
  Recommends: ca-certificates
`)
	got := parseDepends(out)
	want := []string{"libc6", "libcurl4", "libssl3", "zlib1g"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseDepends = %v, want %v", got, want)
	}
}

// TestBusyboxFromDebianIsReproducible needs apt's package lists (and a download unless
// the cache has the package): it skips without them, unless CI is set.
func TestBusyboxFromDebianIsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads a Debian package")
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		require.Skip(t, "no apt-get to fetch busybox-static")
	}
	cache := t.TempDir()
	ctx := context.Background()
	a, err := BusyboxFiles(ctx, Debian{Cache: cache})
	if err != nil {
		require.Skip(t, "busybox-static from Debian's packages: %v", err)
	}
	b, err := BusyboxFiles(ctx, Debian{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	ta, _ := a.Tar()
	tb, _ := b.Tar()
	if sha256.Sum256(ta) != sha256.Sum256(tb) {
		t.Error("two busybox layers from the same package differ")
	}
	for _, applet := range []string{"bin/sh", "usr/bin/nslookup", "usr/bin/wget"} {
		if e, ok := a[applet]; !ok || e.Target != "/bin/busybox" {
			t.Errorf("applet %s: %+v", applet, e)
		}
	}
}

func fileHash(t *testing.T, p string) [32]byte {
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// TestNetshootHasTheConformanceSuitesTools: the MCS conformance suite's client image
// answers nc with OpenBSD's nc (busybox's takes no -4 or -v) and nslookup with bind9's
// (a file over busybox's applet link, whose SRV output the suite parses), and its sh is
// dash (busybox's shell would run its own nc and nslookup whatever the PATH says).
func TestNetshootHasTheConformanceSuitesTools(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads Debian packages")
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		require.Skip(t, "no apt-get to fetch the packages")
	}
	f, err := netshootFiles(context.Background(), Debian{Cache: t.TempDir()})
	if err != nil {
		require.Skip(t, "netshoot's packages from Debian: %v", err)
	}
	for _, l := range []struct{ name, program string }{{"nc", "nc.openbsd"}, {"sh", "dash"}} {
		for _, p := range []string{"bin/" + l.name, "usr/bin/" + l.name} {
			if e := f[p]; e.Type != tar.TypeSymlink || !strings.HasSuffix(e.Target, "/"+l.program) || f[strings.TrimPrefix(e.Target, "/")].Type != tar.TypeReg {
				t.Errorf("%s: %+v, want a link to %s", p, e, l.program)
			}
		}
	}
	for _, p := range []string{"usr/bin/nslookup", "usr/bin/socat"} {
		if e := f[p]; e.Type != tar.TypeReg {
			t.Errorf("%s: %+v, want the program itself", p, e)
		}
	}
}
