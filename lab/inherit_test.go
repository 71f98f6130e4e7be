package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInheritedLockDoesNotReachTheLabsProcesses: a descriptor inherited without
// close-on-exec (as flock(1) hands its lock to the command it runs) is no longer passed
// on to the processes the lab starts, while one passed on on purpose still is.
func TestInheritedLockDoesNotReachTheLabsProcesses(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "lock")
	// As flock(1) opens it: no O_CLOEXEC.
	fd, err := syscall.Open(lock, syscall.O_CREAT|syscall.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	children := func() string {
		out, err := exec.Command("ls", "-l", "/proc/self/fd/").CombinedOutput()
		if err != nil {
			t.Fatalf("ls /proc/self/fd: %v: %s", err, out)
		}
		return string(out)
	}
	if !strings.Contains(children(), lock) {
		t.Fatalf("the test's own premise: a child should inherit %s before the fix:\n%s", lock, children())
	}
	if err := keepInheritedFromChildren(); err != nil {
		t.Fatal(err)
	}
	if out := children(); strings.Contains(out, lock) {
		t.Errorf("a child still holds the inherited lock %s:\n%s", lock, out)
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	if err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("fd %d: flags %#x, %v: want FD_CLOEXEC", fd, flags, err)
	}
	// ExtraFiles still reach a child.
	f, err := os.Open(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("ls", "-l", "/proc/self/fd/3")
	cmd.ExtraFiles = []*os.File{f}
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), lock) {
		t.Errorf("a descriptor passed on on purpose did not reach the child: %v: %s", err, out)
	}
}
