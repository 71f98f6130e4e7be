package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/straitnet/strait/lab/argocd"
	"github.com/straitnet/strait/lab/image"
	"github.com/straitnet/strait/lab/manifest"
)

func main() {
	bin := flag.String("bin", "", "directory of the argocd program (bin/argocd/<version>)")
	kustomize := flag.String("kustomize", "", "the kustomize program the repo-server runs")
	argocdbin := flag.String("argocdbin", "test/argocdbin", "the wrapper module that pins the Argo CD release")
	out := flag.String("out", "bin/images", "directory for the image tarballs")
	cache := flag.String("cache", "bin/cache/debs", "directory caching downloaded Debian packages")
	flag.Parse()
	if err := build(context.Background(), *bin, *kustomize, *argocdbin, *out, *cache); err != nil {
		fmt.Fprintln(os.Stderr, "argocdimages:", err)
		os.Exit(1)
	}
}

func build(ctx context.Context, bin, kustomize, argocdbin, out, cache string) error {
	if kustomize == "" {
		return fmt.Errorf("-kustomize: the kustomize program is required (make tools builds it)")
	}
	r, err := argocd.Locate(ctx, argocdbin)
	if err != nil {
		return err
	}
	if bin == "" {
		bin = filepath.Join("bin", "argocd", r.Version)
	}
	program, err := os.ReadFile(filepath.Join(bin, "argocd"))
	if err != nil {
		return fmt.Errorf("%w (make argocd-binaries builds it)", err)
	}
	kz, err := os.ReadFile(kustomize)
	if err != nil {
		return err
	}
	cache, err = filepath.Abs(cache)
	if err != nil {
		return err
	}
	deb := image.Debian{Cache: cache}
	server, err := r.ImageSpec(ctx, deb, program, kz)
	if err != nil {
		return err
	}
	redis, err := r.RedisImageSpec(ctx, deb)
	if err != nil {
		return err
	}
	for _, spec := range []image.Spec{server, redis} {
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
	path := filepath.Join(out, argocd.InstallFile)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	fmt.Printf("%-40s %d objects %s\n", "install", len(objs), path)
	return nil
}
