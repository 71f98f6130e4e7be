package flannel

import (
	"archive/tar"
	"strings"
	"testing"

	"github.com/straitnet/strait/lab/image"
)

func userland(paths ...string) image.Files {
	f := image.Files{}
	for _, p := range paths {
		_ = f.Add(image.File(p, 0o755, []byte("binary")))
	}
	return f
}

func TestImageHasFlanneldWhereTheManifestRunsItAndIPTablesByItsName(t *testing.T) {
	u := userland("usr/sbin/xtables-nft-multi", "usr/sbin/nft", "lib/x86_64-linux-gnu/libc.so.6")
	spec, err := ImageSpec([]byte("flanneld"), u)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Ref != Image || len(spec.Entrypoint) != 1 || spec.Entrypoint[0] != FlanneldPath {
		t.Fatalf("ref %s entrypoint %v: want %s running %s", spec.Ref, spec.Entrypoint, Image, FlanneldPath)
	}
	all := image.Files{}
	for _, l := range spec.Layers {
		for _, e := range l {
			_ = all.Add(e)
		}
	}
	if e := all[strings.TrimPrefix(FlanneldPath, "/")]; string(e.Data) != "flanneld" || e.Mode&0o111 == 0 {
		t.Errorf("%s: %+v, want the executable flanneld", FlanneldPath, e)
	}
	for _, cmd := range []string{"iptables", "iptables-save", "iptables-restore"} {
		if e := all["usr/sbin/"+cmd]; e.Type != tar.TypeSymlink || e.Target != "xtables-nft-multi" {
			t.Errorf("usr/sbin/%s: %+v, want a symlink to xtables-nft-multi (iptables-nft)", cmd, e)
		}
	}
	if _, ok := u["usr/sbin/iptables"]; ok {
		t.Errorf("ImageSpec changed the userland it was given")
	}
}

func TestImageRefusesAUserlandWithoutItsTools(t *testing.T) {
	for missing, u := range map[string]image.Files{
		"usr/sbin/nft":               userland("usr/sbin/xtables-nft-multi"),
		"usr/sbin/xtables-nft-multi": userland("usr/sbin/nft"),
	} {
		if _, err := ImageSpec([]byte("flanneld"), u); err == nil || !strings.Contains(err.Error(), missing) {
			t.Errorf("error %v, want one naming %s", err, missing)
		}
	}
	if _, err := ImageSpec(nil, userland("usr/sbin/nft", "usr/sbin/xtables-nft-multi")); err == nil {
		t.Errorf("no error for an empty flanneld")
	}
}
