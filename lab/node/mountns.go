package node

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// privateDirs get a fresh tmpfs in every node's mount namespace: containerd, runc and the
// kubelet write fixed paths under them (/run/containerd/s, /var/lib/kubelet/device-plugins,
// /var/log/pods, /var/lib/cni) that would otherwise be shared with the host and the other
// nodes.
func privateDirs() []string { return []string{"/run", "/var/lib", "/var/log"} }

// protectedSysctls are the host-wide sysctls the kubelet sets on start
// (vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1 would make an oops
// reboot the machine). In the node's mount namespace a file holding the current value
// covers each, so the kubelet's write never reaches the kernel.
func protectedSysctls() []string {
	return []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}
}

// createMountNS makes the node's mount namespace and pins it on l.mountNS(): the private
// directories on tmpfs, keep (the state directory, the binaries) bound back at their
// paths, the protected sysctls covered.
func createMountNS(l layout, keep []string) error {
	if err := snapshotSysctls(l.sysctlDir()); err != nil {
		return err
	}
	// The namespace file must sit on a private mount: on a shared one the bind would
	// propagate to other namespaces and keep the node's alive there.
	if err := os.MkdirAll(l.nsDir(), 0o700); err != nil {
		return err
	}
	if err := unix.Mount(l.nsDir(), l.nsDir(), "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", l.nsDir(), err)
	}
	if err := unix.Mount("", l.nsDir(), "", unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make %s private: %w", l.nsDir(), err)
	}
	if err := os.WriteFile(l.mountNS(), nil, 0o600); err != nil {
		return err
	}
	type result struct {
		tid int
		err error
	}
	ready := make(chan result, 1)
	release := make(chan struct{})
	go func() {
		// The thread is never unlocked: it leaves the process with this goroutine, and
		// the namespace stays pinned by the bind mount only.
		runtime.LockOSThread()
		if err := setUpMountNS(l, keep); err != nil {
			ready <- result{err: err}
			return
		}
		ready <- result{tid: unix.Gettid()}
		<-release
	}()
	r := <-ready
	defer close(release)
	if r.err != nil {
		return r.err
	}
	src := fmt.Sprintf("/proc/%d/task/%d/ns/mnt", os.Getpid(), r.tid)
	if err := unix.Mount(src, l.mountNS(), "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("pin mount namespace on %s: %w", l.mountNS(), err)
	}
	return nil
}

// setUpMountNS runs on a locked thread: it unshares the mount namespace and mounts.
func setUpMountNS(l layout, keep []string) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	// Open what must stay visible before the tmpfs hides it; bound back by descriptor.
	kept := map[string]int{}
	for _, k := range outermost(keep) {
		if under(k, privateDirs()...) {
			fd, err := unix.Open(k, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("open %s: %w", k, err)
			}
			defer unix.Close(fd)
			kept[k] = fd
		}
	}
	for _, d := range privateDirs() {
		if _, err := os.Stat(d); err != nil {
			continue
		}
		if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755"); err != nil {
			return fmt.Errorf("tmpfs on %s: %w", d, err)
		}
	}
	// /var/run is /run on Debian; the lock directory some tools expect.
	_ = os.MkdirAll("/run/lock", 0o755)
	for _, k := range outermost(keep) {
		fd, ok := kept[k]
		if !ok {
			continue
		}
		if err := os.MkdirAll(k, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), k, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s back: %w", k, err)
		}
	}
	// The kubelet's root, a shared mount point of its own before the kubelet starts. The
	// kubelet makes its root rshared at start, and when it is not yet, it binds the root
	// onto itself (not recursively) in its Run goroutine, while other goroutines are
	// creating their sockets under it (pod-resources, pods-api): a socket made before the
	// bind and renamed after it is gone (ENOENT) or on another mount (EXDEV), and the
	// kubelet exits (CI lost a lab three times to it, the last on a tmpfs meant to
	// avoid it). Already shared, the kubelet leaves it as it is, as on a systemd host,
	// where / is shared.
	root := l.kubeletRoot()
	if err := os.MkdirAll(root, 0o750); err != nil {
		return err
	}
	if err := unix.Mount(root, root, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", root, err)
	}
	if err := unix.Mount("", root, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make %s rshared: %w", root, err)
	}
	for _, s := range protectedSysctls() {
		file := filepath.Join(l.sysctlDir(), strings.ReplaceAll(s, "/", "."))
		if _, err := os.Stat(file); err != nil {
			continue
		}
		if err := unix.Mount(file, "/proc/sys/"+s, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("cover sysctl %s: %w", s, err)
		}
	}
	return nil
}

// snapshotSysctls writes the current value of each protected sysctl into dir.
func snapshotSysctls(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range protectedSysctls() {
		v, err := os.ReadFile("/proc/sys/" + s)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, strings.ReplaceAll(s, "/", ".")), v, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// outermost drops every path that lies under another one of paths, sorted.
func outermost(paths []string) []string {
	var out []string
	sorted := append([]string(nil), paths...)
	sort.Strings(sorted)
	for _, p := range sorted {
		p = filepath.Clean(p)
		if len(out) > 0 && under(p, out...) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// under says whether p is one of dirs or below one.
func under(p string, dirs ...string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// removeMountNS unpins the node's mount namespace: once no process is left in it, the
// kernel drops it with every mount inside (tmpfs, overlays, pod volumes).
func removeMountNS(l layout) error {
	var errs []error
	for _, m := range []string{l.mountNS(), l.nsDir()} {
		if !isMountPoint(m) {
			continue
		}
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// openMountInfo opens the mount table of the calling thread's mount namespace.
// /proc/self/mountinfo would be the main thread's, and the main thread may be the one
// that unshared a node's mount namespace in createMountNS: the Go runtime parks rather
// than ends a locked main thread whose goroutine exits, so it stays in the node's
// namespace for the life of the process. Every thread that runs Go code is in the host's.
func openMountInfo() (*os.File, error) { return os.Open("/proc/thread-self/mountinfo") }

// mountPoints lists the host's mount points at or under dir, deepest first.
func mountPoints(dir string) []string {
	f, err := openMountInfo()
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if mp := unescapeMount(fields[4]); under(mp, dir) {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func isMountPoint(p string) bool {
	for _, m := range mountPoints(p) {
		if m == p {
			return true
		}
	}
	return false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unmountDetached(p string) error { return unix.Unmount(p, unix.MNT_DETACH) }
