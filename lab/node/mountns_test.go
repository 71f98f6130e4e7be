package node

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
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

// TestTheKubeletFindsItsRootShared: in a node's mount namespace the kubelet's root is on
// a shared mount before the kubelet starts, by the kubelet's own test (the innermost
// mount point holding the root carries a shared: peer group), so the kubelet does not
// bind its root onto itself while its other goroutines create their sockets under it.
// That bind raced the pod-resources socket and ended a lab's kubelet three times in CI
// (EXDEV, then ENOENT on the temporary socket's removal and on its rename).
func TestTheKubeletFindsItsRootShared(t *testing.T) {
	require.Root(t, "nsenter")
	l := layout{dir: t.TempDir()}
	t.Cleanup(func() {
		if err := removeMountNS(l); err != nil {
			t.Error(err)
		}
	})
	if err := createMountNS(l, []string{l.dir}); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("nsenter", "--mount="+l.mountNS(), "cat", "/proc/self/mountinfo").CombinedOutput()
	if err != nil {
		t.Fatalf("read the node's mount table: %v: %s", err, out)
	}
	root := l.kubeletRoot()
	var holder, optional string
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 7 {
			continue
		}
		// The kubelet takes the last line whose mount point holds the path.
		if mp := unescapeMount(fields[4]); under(root, mp) {
			holder, optional = mp, strings.Join(fields[6:slices.Index(fields, "-")], " ")
		}
	}
	if holder != root || !strings.Contains(optional, "shared:") {
		t.Errorf("the kubelet's root %s is held by mount %s with %q: the kubelet would bind it onto itself at start", root, holder, optional)
	}
	if host := mountPoints(l.dir); !slices.Equal(host, []string{l.mountNS(), l.nsDir()}) {
		t.Errorf("the host sees mounts under the node's state other than the namespace's pin: %v", host)
	}
}
