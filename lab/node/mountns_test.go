package node

import (
	"os"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/straitnet/strait/test/require"
)

// TestMountPointsAreTheCallingThreads: the mount table the node code reads is the one of
// the thread that reads it. A thread that unshared a node's mount namespace sees its own
// mounts; any other thread sees the host's. Reading /proc/self instead gave the main
// thread's table, and once a node's namespace had been unshared on the main thread
// (which the Go runtime parks rather than ends), teardown saw the node's mounts as the
// host's and failed (CI, stop 18).
func TestMountPointsAreTheCallingThreads(t *testing.T) {
	require.Root(t)
	dir := t.TempDir()
	type views struct {
		inside []string
		err    error
	}
	done := make(chan views, 1)
	host := make(chan []string, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, in its own namespace.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			done <- views{err: err}
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			done <- views{err: err}
			return
		}
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, ""); err != nil {
			done <- views{err: err}
			return
		}
		// Asked from another thread while this one is still in the private namespace.
		go func() { host <- mountPoints(dir) }()
		seenFromHost := <-host
		host <- seenFromHost
		done <- views{inside: mountPoints(dir)}
	}()
	v := <-done
	if v.err != nil {
		t.Fatal(v.err)
	}
	if !slices.Contains(v.inside, dir) {
		t.Errorf("the thread that mounted %s does not see it: %v", dir, v.inside)
	}
	if fromHost := <-host; len(fromHost) != 0 {
		t.Errorf("another thread sees the private namespace's mounts as the host's: %v", fromHost)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
