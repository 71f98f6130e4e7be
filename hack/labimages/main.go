package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/straitnet/strait/lab/image"
)

func main() {
	out := flag.String("out", "bin/images", "directory for the image tarballs")
	cache := flag.String("cache", "bin/cache/debs", "directory caching downloaded Debian packages")
	module := flag.String("module", ".", "root of the strait repository")
	flag.Parse()
	if err := build(context.Background(), *out, *cache, *module); err != nil {
		fmt.Fprintln(os.Stderr, "labimages:", err)
		os.Exit(1)
	}
}

func build(ctx context.Context, out, cache, module string) error {
	cache, err := filepath.Abs(cache)
	if err != nil {
		return err
	}
	specs, err := image.Catalog(ctx, image.Sources{Module: module, Debian: image.Debian{Cache: cache}})
	if err != nil {
		return err
	}
	for _, s := range specs {
		path, digest, err := s.Write(out)
		if err != nil {
			return err
		}
		fmt.Printf("%-26s %s %s\n", s.Ref, digest, path)
	}
	return nil
}
