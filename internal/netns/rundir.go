package netns

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// PrepareRunDir makes RunDir a shared mount point, as ip(8) does before it adds the first
// namespace, and does it under a lock so that it happens once.
//
// ip(8) finds RunDir not yet a mount point (on a freshly booted host), bind-mounts RunDir
// onto itself with its submounts. When another process has just mounted a namespace
// there without ip(8) (vishvananda/netns does), that namespace now has two mounts, one
// hidden under the new layer: deleting it unmounts the visible one, and unlinking its
// file fails with EBUSY for good. Two ip(8) processes racing stack two layers the same
// way. Every namespace this project creates comes after PrepareRunDir, so ip(8) never
// has to do it.
func PrepareRunDir() error {
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return err
	}
	// The lock is the directory's inode, which the bind mount below keeps: every process
	// that opens RunDir afterwards locks the same one.
	dir, err := os.Open(RunDir)
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := unix.Flock(int(dir.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", RunDir, err)
	}
	err = unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if !errors.Is(err, unix.EINVAL) {
		return wrapMount(err)
	}
	// Not a mount point yet.
	if err := unix.Mount(RunDir, RunDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return wrapMount(err)
	}
	return wrapMount(unix.Mount("", RunDir, "none", unix.MS_SHARED|unix.MS_REC, ""))
}

func wrapMount(err error) error {
	if err != nil {
		return fmt.Errorf("making %s a shared mount point: %w", RunDir, err)
	}
	return nil
}
