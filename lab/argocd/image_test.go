package argocd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/straitnet/strait/lab/image"
	"github.com/straitnet/strait/test/require"
)

// TestImagesHoldWhatThePodsRun needs apt's package lists (and downloads unless the cache
// has the packages): it skips without them, unless CI is set. The programs are stand-ins:
// make argocd-images puts the real ones in.
func TestImagesHoldWhatThePodsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads Debian packages")
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		require.Skip(t, "no apt-get to fetch git and redis-server")
	}
	ctx := context.Background()
	deb := image.Debian{Cache: t.TempDir()}
	// The release's scripts, stand-ins as the programs are.
	r := Release{Version: "v3.6.1", Source: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(r.Source, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{"gpg-wrapper.sh", "git-verify-wrapper.sh"} {
		if err := os.WriteFile(filepath.Join(r.Source, "hack", script), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := r.ImageSpec(ctx, deb, []byte("argocd"), []byte("kustomize"))
	if err != nil {
		require.Skip(t, "Debian's packages: %v", err)
	}
	if spec.Ref != "strait-lab/argocd:v3.6.1" || spec.User != "999:999" {
		t.Errorf("argocd image %s user %s, want strait-lab/argocd:v3.6.1 as 999:999 (the pods' runAsNonRoot)", spec.Ref, spec.User)
	}
	want := map[string]string{
		// The pods' commands, the repo-server's tools, its init container's sh, cp and ln.
		"usr/local/bin/argocd-server":                 "/usr/local/bin/argocd",
		"usr/local/bin/argocd-repo-server":            "/usr/local/bin/argocd",
		"usr/local/bin/argocd-application-controller": "/usr/local/bin/argocd",
		"usr/local/bin/argocd":                        "",
		"usr/local/bin/kustomize":                     "",
		"usr/bin/git":                                 "",
		"usr/bin/gpg":                                 "",
		"usr/bin/gpg-agent":                           "",
		"usr/local/bin/gpg-wrapper.sh":                "",
		"usr/local/bin/git-verify-wrapper.sh":         "",
		"bin/sh":                                      "/bin/busybox",
		"bin/cp":                                      "/bin/busybox",
		"bin/ln":                                      "/bin/busybox",
		"home/argocd":                                 "",
	}
	for p, target := range want {
		if e, ok := find(spec, p); !ok || e.Target != target {
			t.Errorf("argocd image: %s is %+v (found %v), want target %q", p, e.Target, ok, target)
		}
	}
	redis, err := r.RedisImageSpec(ctx, deb)
	if err != nil {
		t.Fatal(err)
	}
	if redis.Ref != r.RedisImage() || len(redis.Entrypoint) != 1 || redis.Entrypoint[0] != "/usr/bin/redis-server" || redis.User != "999:999" {
		t.Errorf("redis image %s entrypoint %v user %s", redis.Ref, redis.Entrypoint, redis.User)
	}
	if _, err := spec.Image(); err != nil {
		t.Fatal(err)
	}
}

// find is the entry of p in the topmost layer that has it, as the image's file system shows it.
func find(s image.Spec, p string) (image.Entry, bool) {
	for i := len(s.Layers) - 1; i >= 0; i-- {
		if e, ok := s.Layers[i][p]; ok {
			return e, true
		}
	}
	return image.Entry{}, false
}
