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
	conformance := flag.Bool("conformance", false, "build the MCS conformance suite's images (socat, netshoot) instead of the lab's")
	flag.Parse()
	if err := build(context.Background(), *out, *cache, *module, *conformance); err != nil {
		fmt.Fprintln(os.Stderr, "labimages:", err)
		os.Exit(1)
	}
}

func build(ctx context.Context, out, cache, module string, conformance bool) error {
	cache, err := filepath.Abs(cache)
	if err != nil {
		return err
	}
	catalog := image.Catalog
	if conformance {
		catalog = image.ConformanceCatalog
	}
	specs, err := catalog(ctx, image.Sources{Module: module, Debian: image.Debian{Cache: cache}})
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
