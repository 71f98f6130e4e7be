package argocd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Namespace is where Argo CD's install.yaml expects to be applied, and where the lab's
// Application lives.
const Namespace = "argocd"

// ModulePath is the Go module of Argo CD; its manifests/ are the install.
const ModulePath = "github.com/argoproj/argo-cd/v3"

// Release is one pinned Argo CD release: its version and where its module source is.
type Release struct {
	// Version is the module's version, like "v3.6.1".
	Version string
	// Source is the module's source directory in the module cache.
	Source string
}

// Image is the ref of the locally built image of the argocd program, which every Argo CD
// pod the lab keeps runs: the lab's nodes import it, nothing is pulled.
func (r Release) Image() string { return "strait-lab/argocd:" + r.Version }

// Locate finds the release the wrapper module in dir (test/argocdbin) requires,
// downloading it into the module cache when it is not there yet. The go command runs with
// the toolchain of the wrapper's toolchain line: Argo CD needs a newer Go than the
// project's, and GOTOOLCHAIN=local would refuse the module.
func Locate(ctx context.Context, dir string) (Release, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return Release{}, err
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", ModulePath)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	if tc := toolchain(gomod); tc != "" {
		cmd.Env = append(cmd.Env, "GOTOOLCHAIN="+tc)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	// go mod download -json reports a module's failure in its Error field and exits 1:
	// parse first, so the message names the module.
	var m struct{ Path, Version, Dir, Error string }
	if perr := json.Unmarshal(out, &m); perr != nil {
		return Release{}, fmt.Errorf("go mod download %s in %s: %w: %s", ModulePath, dir, errors.Join(err, perr), strings.TrimSpace(stderr.String()))
	}
	switch {
	case m.Error != "":
		return Release{}, fmt.Errorf("module %s@%s: %s", m.Path, m.Version, m.Error)
	case m.Dir == "" || m.Version == "":
		return Release{}, fmt.Errorf("module %s: no version or source directory in go mod download's answer", ModulePath)
	}
	return Release{Version: m.Version, Source: m.Dir}, nil
}

// toolchain is the toolchain line of a go.mod ("go1.27.3"), or "".
func toolchain(gomod []byte) string {
	for line := range strings.SplitSeq(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "toolchain "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}
