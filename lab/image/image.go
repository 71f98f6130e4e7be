package image

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// DefaultPath is the PATH of every image.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Spec is one image: its layers bottom first and how it runs.
type Spec struct {
	// Ref is name:tag, like "strait-lab/whereami:dev". Kubernetes and containerd see it
	// as docker.io/strait-lab/whereami:dev.
	Ref        string
	Layers     []Files
	Entrypoint []string
	Cmd        []string
	Env        []string
	// User is who the entrypoint runs as, "uid:gid", numeric: a pod with runAsNonRoot and
	// no runAsUser starts only from an image whose user is a number other than 0.
	User string
	// Labels go into the image config (OCI annotations such as
	// org.opencontainers.image.version); they are part of the digest.
	Labels map[string]string
	// CreatedBy is each layer's history entry; empty means "strait lab image".
	CreatedBy string
}

// File is the tarball's file name: the last path element of the name, without the tag.
func (s Spec) File() (string, error) {
	ref, err := name.NewTag(s.Ref)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", s.Ref, err)
	}
	return filepath.Base(ref.RepositoryStr()) + ".tar", nil
}

// Image assembles the image for linux/amd64 with every timestamp at Epoch.
func (s Spec) Image() (v1.Image, error) {
	img := empty.Image
	createdBy := s.CreatedBy
	if createdBy == "" {
		createdBy = "strait lab image"
	}
	for i, files := range s.Layers {
		l, err := files.Layer()
		if err != nil {
			return nil, fmt.Errorf("image %s layer %d: %w", s.Ref, i, err)
		}
		img, err = mutate.Append(img, mutate.Addendum{Layer: l, History: v1.History{
			Created: v1.Time{Time: Epoch()}, CreatedBy: createdBy,
		}})
		if err != nil {
			return nil, fmt.Errorf("image %s layer %d: %w", s.Ref, i, err)
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: Epoch()}
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Entrypoint, cfg.Config.Cmd = s.Entrypoint, s.Cmd
	cfg.Config.Env = append([]string{DefaultPath}, s.Env...)
	cfg.Config.User, cfg.Config.Labels = s.User, s.Labels
	return mutate.ConfigFile(img, cfg)
}

// Write writes the image as a tarball `ctr images import` reads into dir (replacing an
// older one atomically) and returns its path and the image digest.
func (s Spec) Write(dir string) (string, v1.Hash, error) {
	file, err := s.File()
	if err != nil {
		return "", v1.Hash{}, err
	}
	ref, err := name.NewTag(s.Ref)
	if err != nil {
		return "", v1.Hash{}, fmt.Errorf("image %q: %w", s.Ref, err)
	}
	img, err := s.Image()
	if err != nil {
		return "", v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return "", v1.Hash{}, fmt.Errorf("image %s: %w", s.Ref, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", v1.Hash{}, err
	}
	path := filepath.Join(dir, file)
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		_ = os.Remove(tmp)
		return "", v1.Hash{}, fmt.Errorf("image %s: %w", s.Ref, err)
	}
	return path, digest, os.Rename(tmp, path)
}
