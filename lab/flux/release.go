package flux

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"slices"
	"strings"
)

// Namespace is where `flux install` puts Flux and where the lab's GitRepository and
// Kustomization live.
const Namespace = "flux-system"

// The controllers the lab runs; each is also its module's last path element, its binary's
// and image's name, its Deployment's and its ServiceAccount's.
const (
	SourceController    = "source-controller"
	KustomizeController = "kustomize-controller"
)

// Controllers are the lab's Flux controllers, source first: kustomize-controller reads
// the artifacts source-controller serves.
func Controllers() []string { return []string{SourceController, KustomizeController} }

// ModulePath is the Go module of a controller.
func ModulePath(controller string) string { return "github.com/fluxcd/" + controller }

// Release is one pinned Flux release: the version of both controllers and where their
// module sources are.
type Release struct {
	// Version is both controllers' module version, like "v1.9.6".
	Version string
	// Sources maps each controller to its module's source directory in the module cache.
	Sources map[string]string
}

// Image is the ref of the locally built image of controller, which the install's
// Deployment runs: the lab's nodes import it, nothing is pulled.
func (r Release) Image(controller string) string { return imageName(controller) + ":" + r.Version }

func imageName(controller string) string { return "strait-lab/" + controller }

// Locate finds the release the wrapper module in dir (test/fluxbin) requires, downloading
// its two modules into the module cache when they are not there yet.
func Locate(ctx context.Context, dir string) (Release, error) {
	args := []string{"mod", "download", "-json"}
	for _, c := range Controllers() {
		args = append(args, ModulePath(c))
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// go mod download -json reports a module's failure in its Error field and exits 1:
	// parse first, so the message names the module.
	mods, perr := parseDownload(out)
	if perr != nil || (err != nil && len(mods) == 0) {
		return Release{}, fmt.Errorf("go mod download in %s: %w: %s", dir, errors.Join(err, perr), strings.TrimSpace(stderr.String()))
	}
	return release(mods)
}

type downloaded struct {
	Path, Version, Dir, Error string
}

func parseDownload(out []byte) ([]downloaded, error) {
	var mods []downloaded
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m downloaded
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return mods, nil
		} else if err != nil {
			return mods, err
		}
		mods = append(mods, m)
	}
}

// release checks that both controllers were found at one version.
func release(mods []downloaded) (Release, error) {
	r := Release{Sources: map[string]string{}}
	for _, m := range mods {
		controller := path.Base(m.Path)
		if m.Path != ModulePath(controller) || !slices.Contains(Controllers(), controller) {
			return Release{}, fmt.Errorf("module %s: not one of the Flux controllers %v", m.Path, Controllers())
		}
		if m.Error != "" {
			return Release{}, fmt.Errorf("module %s@%s: %s", m.Path, m.Version, m.Error)
		}
		if m.Dir == "" {
			return Release{}, fmt.Errorf("module %s@%s: no source directory", m.Path, m.Version)
		}
		if r.Version != "" && m.Version != r.Version {
			return Release{}, fmt.Errorf("module %s@%s: the other controller is at %s: pin both to one release", m.Path, m.Version, r.Version)
		}
		r.Version = m.Version
		r.Sources[controller] = m.Dir
	}
	for _, c := range Controllers() {
		if r.Sources[c] == "" {
			return Release{}, fmt.Errorf("module %s: not downloaded", ModulePath(c))
		}
	}
	return r, nil
}
