package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/straitnet/strait/lab/flannel"
	"github.com/straitnet/strait/lab/image"
)

func main() {
	flanneld := flag.String("flanneld", "bin/node/flanneld", "the flanneld binary (make node-binaries)")
	out := flag.String("out", "bin/images", "directory for the image tarball and the manifest")
	cache := flag.String("cache", "bin/cache/debs", "directory caching downloaded Debian packages")
	flag.Parse()
	if err := build(context.Background(), *flanneld, *out, *cache); err != nil {
		fmt.Fprintln(os.Stderr, "flannelimage:", err)
		os.Exit(1)
	}
}

func build(ctx context.Context, flanneld, out, cache string) error {
	cache, err := filepath.Abs(cache)
	if err != nil {
		return err
	}
	bin, err := os.ReadFile(flanneld)
	if err != nil {
		return fmt.Errorf("%w (make node-binaries builds it)", err)
	}
	userland, err := image.Debian{Cache: cache}.Files(ctx, flannel.UserlandPackages())
	if err != nil {
		return err
	}
	spec, err := flannel.ImageSpec(bin, userland)
	if err != nil {
		return err
	}
	path, digest, err := spec.Write(out)
	if err != nil {
		return err
	}
	fmt.Printf("%-26s %s %s\n", spec.Ref, digest, path)
	manifest, err := upstreamManifest(ctx)
	if err != nil {
		return err
	}
	// The lab patches it when it installs flannel: fail here, at build time, when the
	// release's manifest no longer has what the patches change.
	if _, err := flannel.Manifest(manifest, flannel.Options{Network: netip.MustParsePrefix("10.244.0.0/16"), Interface: "eth0"}); err != nil {
		return err
	}
	path = filepath.Join(out, flannel.ManifestFile)
	if err := os.WriteFile(path, manifest, 0o644); err != nil {
		return err
	}
	fmt.Printf("%-26s %s\n", "manifest", path)
	return nil
}

// upstreamManifest reads the manifest from the pinned module, downloading it into the
// module cache when it is not there yet.
func upstreamManifest(ctx context.Context) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", flannel.Module+"@"+flannel.Version)
	cmd.Stderr = &stderr
	data, err := cmd.Output()
	var mod struct{ Dir, Error string }
	// A module's failure is in its Error field (and the exit code): parse first.
	jerr := json.Unmarshal(data, &mod)
	if err := errors.Join(err, jerr); err != nil {
		return nil, fmt.Errorf("go mod download %s@%s: %w: %s %s", flannel.Module, flannel.Version, err, mod.Error, strings.TrimSpace(stderr.String()))
	}
	if mod.Dir == "" {
		return nil, fmt.Errorf("go mod download %s@%s: no source directory", flannel.Module, flannel.Version)
	}
	return os.ReadFile(filepath.Join(mod.Dir, flannel.UpstreamManifest))
}
