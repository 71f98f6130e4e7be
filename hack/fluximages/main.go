package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/straitnet/strait/lab/flux"
	"github.com/straitnet/strait/lab/manifest"
)

func main() {
	bin := flag.String("bin", "", "directory of the controllers' binaries (bin/flux/<version>)")
	fluxbin := flag.String("fluxbin", "test/fluxbin", "the wrapper module that pins the Flux release")
	out := flag.String("out", "bin/images", "directory for the image tarballs")
	flag.Parse()
	if err := build(context.Background(), *bin, *fluxbin, *out); err != nil {
		fmt.Fprintln(os.Stderr, "fluximages:", err)
		os.Exit(1)
	}
}

func build(ctx context.Context, bin, fluxbin, out string) error {
	r, err := flux.Locate(ctx, fluxbin)
	if err != nil {
		return err
	}
	if bin == "" {
		bin = filepath.Join("bin", "flux", r.Version)
	}
	for _, c := range flux.Controllers() {
		binary, err := os.ReadFile(filepath.Join(bin, c))
		if err != nil {
			return fmt.Errorf("%w (make flux-binaries builds it)", err)
		}
		spec, err := r.ImageSpec(c, binary)
		if err != nil {
			return err
		}
		path, digest, err := spec.Write(out)
		if err != nil {
			return err
		}
		fmt.Printf("%-40s %s %s\n", spec.Ref, digest, path)
	}
	objs, err := r.Objects()
	if err != nil {
		return err
	}
	data, err := manifest.Encode(objs)
	if err != nil {
		return err
	}
	path := filepath.Join(out, flux.InstallFile)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	fmt.Printf("%-40s %d objects %s\n", "install", len(objs), path)
	return nil
}
