package node

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// A seed is the part of a containerd root that importing a set of images writes (the
// content store, the metadata database and the overlayfs snapshots), kept after one node
// imported the set so that the next node of the same set starts from it instead of
// importing again: importing decompresses, hashes and writes every layer twice (the
// content and the unpacked snapshot), about 0.4 GB and 2 CPU-s a node; linking a seed
// writes two small databases.
//
// A node links the seed's files (hard links) rather than sharing the directories:
// separate containerd stores must not share one content store, as one's garbage
// collection would delete the other's blobs, but a hard link is a name of the node's
// own: removing it leaves the seed's and the other nodes' names. Containerd never writes
// a blob or a committed snapshot's files in place (a container's writes go to its own
// upper directory), so the linked inodes stay as the seed made them. The two bolt
// databases are written in place, so each node gets copies of them.

// seedFormat changes when what a seed holds or how containerd is configured to read it
// changes: seeds of another format are never used.
const seedFormat = "1"

// seedDirs are the directories of a containerd root a seed keeps: everything else
// (the CRI plugin's and the runtime's state, the instance's introspection UUID) is the
// node's own.
func seedDirs() []string {
	return []string{"io.containerd.content.v1.content", "io.containerd.metadata.v1.bolt", "io.containerd.snapshotter.v1.overlayfs"}
}

// seedDatabases are the files of a seed that containerd writes in place: copied, never
// linked.
func seedDatabases() []string {
	return []string{"io.containerd.metadata.v1.bolt/meta.db", "io.containerd.snapshotter.v1.overlayfs/metadata.db"}
}

// SeedPath is where the seed of c's image set is kept under c.Seeds: a directory per
// set, named by the set (the tarballs' paths) and by what the seed was made from (each
// tarball's size and time, containerd's binary, the seed format), so that rebuilding an
// image or containerd makes a new seed. Empty when c.Seeds is.
func SeedPath(c Config) (string, error) {
	if c.Seeds == "" {
		return "", nil
	}
	set, made := sha256.New(), sha256.New()
	fmt.Fprintf(made, "format %s\n", seedFormat)
	images := append([]string(nil), c.Images...)
	sort.Strings(images)
	for _, p := range append(images, filepath.Join(c.BinDir, "containerd")) {
		fi, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("seed of %s: %w", c.Name, err)
		}
		fmt.Fprintf(set, "%s\n", p)
		fmt.Fprintf(made, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
	}
	return filepath.Join(c.Seeds, seedName(set.Sum(nil), made.Sum(nil))), nil
}

func seedName(set, made []byte) string {
	return hex.EncodeToString(set)[:12] + "-" + hex.EncodeToString(made)[:12]
}

// SeedSaved says whether a seed is in place at path, saved whole (saveSeed renames it
// into place last).
func SeedSaved(seed string) bool {
	_, err := os.Stat(filepath.Join(seed, "images.txt"))
	return err == nil
}

// linkSeed gives root, a containerd root not yet in use, the seed's files.
func linkSeed(ctx context.Context, seed, root string) error {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	if err := copyRoot(ctx, filepath.Join(seed, "root"), root); err != nil {
		return fmt.Errorf("link seed %s: %w", seed, err)
	}
	return nil
}

// copyRoot gives the containerd root to (an existing directory) the seed's part of the
// root from: directories made anew, files hard-linked (copied when the two are on
// different filesystems), the databases copied. Every attribute is kept, overlayfs's
// opaque-directory xattrs among them.
func copyRoot(ctx context.Context, from, to string) error {
	link := sameFilesystem(from, to)
	for _, d := range seedDirs() {
		if err := copyTree(ctx, link, filepath.Join(from, d), to); err != nil {
			return err
		}
	}
	for _, db := range seedDatabases() {
		dst := filepath.Join(to, db)
		if err := os.Remove(dst); err != nil {
			return err
		}
		if err := copyTree(ctx, false, filepath.Join(from, db), dst); err != nil {
			return err
		}
	}
	return nil
}

// saveSeed keeps what a stopped containerd's root holds after importing images as the
// seed at path (the node keeps its own files: the seed's are links to them, its
// databases copies), and removes the older seeds of the same image set. A seed another
// process saved first wins: both are whole.
func saveSeed(ctx context.Context, root, path string, images []string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	tmp := filepath.Join(dir, ".new-"+hex.EncodeToString(suffix))
	if err := os.MkdirAll(filepath.Join(tmp, "root"), 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := copyRoot(ctx, root, filepath.Join(tmp, "root")); err != nil {
		return fmt.Errorf("save seed: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "images.txt"), []byte(strings.Join(images, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil && !SeedSaved(path) {
		return fmt.Errorf("save seed: %w", err)
	}
	set, _, _ := strings.Cut(filepath.Base(path), "-")
	old, _ := filepath.Glob(filepath.Join(dir, set+"-*"))
	for _, o := range old {
		if o != path {
			_ = os.RemoveAll(o)
		}
	}
	return nil
}

// copyTree copies src into dst with every attribute (cp -a), hard-linking files when
// link: GNU cp keeps xattrs, device nodes (overlayfs whiteouts) and owners as root.
func copyTree(ctx context.Context, link bool, src, dst string) error {
	args := []string{"-a"}
	if link {
		args = append(args, "--link")
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "cp", append(args, src, dst)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cp %s %s %s: %w: %s", strings.Join(args, " "), src, dst, err, out)
	}
	return nil
}

// sameFilesystem says whether a and b (which exist) are on one filesystem: hard links
// cannot cross filesystems.
func sameFilesystem(a, b string) bool {
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev
}

// stop ends the component with SIGTERM (containerd closes its databases on it) and
// waits for it, up to timeout, then kills it.
func (p *component) stop(timeout time.Duration) error {
	proc, err := os.FindProcess(p.pid)
	if err != nil {
		return err
	}
	_ = proc.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
		_ = proc.Kill()
		<-p.done
		return errors.New(p.name + " did not stop on SIGTERM within " + timeout.String())
	}
}
