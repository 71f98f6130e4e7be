package lab

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/straitnet/strait/test/require"
)

func isTmpfs(t *testing.T, dir string) bool {
	t.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	return fs.Type == unix.TMPFS_MAGIC
}

// TestStateGoesInMemoryAndComesOut: a new state directory on a disk becomes a tmpfs of
// its own, which lab up again leaves as it is and lab down's unmount takes away; a
// directory that holds anything, or one in a tmpfs already, is not mounted over.
func TestStateGoesInMemoryAndComesOut(t *testing.T) {
	require.Root(t)
	base := t.TempDir()
	if isTmpfs(t, base) {
		require.Skip(t, "%s is a tmpfs already: nothing to mount over", base)
	}
	dir := filepath.Join(base, "state")
	mounted, err := mountState(dir)
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	if err != nil || !mounted || !isTmpfs(t, dir) {
		t.Fatalf("mountState(new directory) = %v, %v (tmpfs %v); want a tmpfs", mounted, err, isTmpfs(t, dir))
	}
	if again, err := mountState(dir); err != nil || again {
		t.Errorf("mountState again = %v, %v; want the tmpfs left as it is", again, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lab.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unmountState(dir); err != nil {
		t.Fatal(err)
	}
	if isTmpfs(t, dir) {
		t.Error("unmountState left the tmpfs")
	}
	if _, err := os.Stat(filepath.Join(dir, "lab.json")); err == nil {
		t.Error("what the lab wrote is still there after the unmount: it went to the disk")
	}

	full := filepath.Join(base, "full")
	if err := os.MkdirAll(full, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(full, "notes"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if mounted, err := mountState(full); err != nil || mounted || isTmpfs(t, full) {
		t.Errorf("mountState(a directory with a file) = %v, %v; want it left alone", mounted, err)
	}
	if err := unmountState(full); err != nil {
		t.Errorf("unmountState of a directory lab up did not mount: %v", err)
	}
}
