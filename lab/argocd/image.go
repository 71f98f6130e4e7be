package argocd

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/straitnet/strait/lab/image"
)

// user is the user Argo CD's own images run as (USER 999, argocd): its pods say
// runAsNonRoot without a runAsUser, so the image's user must be a number other than 0.
const (
	user    = "999:999"
	homeDir = "home/argocd"
)

// Programs are the names the argocd program answers to (it dispatches on argv[0]), as
// Argo CD's Dockerfile links them in /usr/local/bin: the lab's pods run the first three,
// the repo-server's git calls the askpass helper.
func Programs() []string {
	return []string{"argocd-server", "argocd-repo-server", "argocd-application-controller",
		"argocd-cmp-server", "argocd-git-ask-pass", "argocd-k8s-auth"}
}

// ImageSpec is the image every Argo CD pod the lab keeps runs: the argocd program (make
// argocd-binaries) as /usr/local/bin/argocd with a link for each of Programs, the
// kustomize program the repo-server runs for a kustomization, Debian's git, gpg and
// gpg-agent (with what they depend on: the repo-server makes its GnuPG keyring at start
// and exits without gpg) and busybox for the repo-server's init container's sh, cp and
// ln, over the lab's base files with the argocd user. Argo CD's own image adds helm and
// ssh for sources the lab does not use. The release's gpg-wrapper.sh and
// git-verify-wrapper.sh (from its module source) go where its Dockerfile puts them.
func (r Release) ImageSpec(ctx context.Context, deb image.Debian, argocd, kustomize []byte) (image.Spec, error) {
	if len(argocd) == 0 || len(kustomize) == 0 {
		return image.Spec{}, fmt.Errorf("argocd %s image: an empty program (argocd %d bytes, kustomize %d)", r.Version, len(argocd), len(kustomize))
	}
	git, err := deb.Files(ctx, []string{"git", "gpg", "gpg-agent"})
	if err != nil {
		return image.Spec{}, fmt.Errorf("argocd %s image: git and gpg: %w", r.Version, err)
	}
	busybox, err := image.BusyboxFiles(ctx, deb)
	if err != nil {
		return image.Spec{}, fmt.Errorf("argocd %s image: busybox: %w", r.Version, err)
	}
	bin := image.Files{}
	entries := []image.Entry{}
	// The repo-server runs these scripts of the release as its Dockerfile installs them.
	for _, script := range []string{"gpg-wrapper.sh", "git-verify-wrapper.sh"} {
		data, err := os.ReadFile(filepath.Join(r.Source, "hack", script))
		if err != nil {
			return image.Spec{}, fmt.Errorf("argocd %s image: %w", r.Version, err)
		}
		entries = append(entries, image.File("usr/local/bin/"+script, 0o755, data))
	}
	entries = append(entries, []image.Entry{
		image.File("usr/local/bin/argocd", 0o755, argocd),
		image.File("usr/local/bin/kustomize", 0o755, kustomize),
		image.File("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nargocd:x:999:999:Argo CD:/home/argocd:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")),
		image.File("etc/group", 0o644, []byte("root:x:0:\nargocd:x:999:\nnogroup:x:65534:\n")),
		{Path: homeDir, Type: tar.TypeDir, Mode: 0o777},
	}...)
	for _, p := range Programs() {
		entries = append(entries, image.Symlink("usr/local/bin/"+p, "/usr/local/bin/argocd"))
	}
	for _, e := range entries {
		if err := bin.Add(e); err != nil {
			return image.Spec{}, err
		}
	}
	return image.Spec{
		Ref: r.Image(),
		// Bottom first; a path in two layers is the upper one's: the argocd user's
		// /etc/passwd over the base's.
		Layers: []image.Files{image.BaseFiles(), git, busybox, bin},
		// GRPC_ENABLE_TXT_SERVICE_CONFIG as the release's Dockerfile sets it (no DNS TXT
		// lookups of gRPC service configs).
		Env:  []string{"HOME=/" + homeDir, "USER=argocd", "GRPC_ENABLE_TXT_SERVICE_CONFIG=false"},
		User: user,
		Labels: map[string]string{
			"org.opencontainers.image.title":   "argocd",
			"org.opencontainers.image.version": r.Version,
			"org.opencontainers.image.source":  ModulePath,
		},
	}, nil
}

// RedisImageSpec is the Redis image of the release: Debian's redis-server (with what it
// depends on) as the entrypoint, which the install's arguments follow (no persistence, a
// password from the Secret Argo CD's init container writes), running as the argocd user
// as the pod asks.
func (r Release) RedisImageSpec(ctx context.Context, deb image.Debian) (image.Spec, error) {
	redis, err := deb.Files(ctx, []string{"redis-server"})
	if err != nil {
		return image.Spec{}, fmt.Errorf("argocd %s redis image: %w", r.Version, err)
	}
	if _, ok := redis["usr/bin/redis-server"]; !ok {
		return image.Spec{}, fmt.Errorf("argocd %s redis image: no usr/bin/redis-server in Debian's redis-server", r.Version)
	}
	return image.Spec{
		Ref:        r.RedisImage(),
		Layers:     []image.Files{image.BaseFiles(), redis},
		Entrypoint: []string{"/usr/bin/redis-server"},
		User:       user,
		Labels: map[string]string{
			"org.opencontainers.image.title":   "argocd-redis",
			"org.opencontainers.image.version": r.Version,
		},
	}, nil
}
