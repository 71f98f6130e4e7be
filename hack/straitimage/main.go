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
	version := flag.String("version", "dev", "the images' tag, stamped into straitd and the version label")
	revision := flag.String("revision", "", "the git commit (with -dirty for an uncommitted tree); empty means unknown")
	flag.Parse()
	if err := build(context.Background(), *out, *cache, Build{Module: *module, Version: *version, Revision: *revision}); err != nil {
		fmt.Fprintln(os.Stderr, "straitimage:", err)
		os.Exit(1)
	}
}

func build(ctx context.Context, out, cache string, b Build) error {
	cache, err := filepath.Abs(cache)
	if err != nil {
		return err
	}
	b.Debian = image.Debian{Cache: cache}
	specs, err := Specs(ctx, b)
	if err != nil {
		return err
	}
	for _, s := range specs {
		path, digest, err := s.Write(out)
		if err != nil {
			return err
		}
		fmt.Printf("%-22s %s %s\n", s.Ref, digest, path)
	}
	return nil
}
