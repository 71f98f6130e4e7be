package node

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// hierarchies are the mount points of every cgroup hierarchy (v1 and the unified one).
func hierarchies() ([]string, error) {
	f, err := openMountInfo()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// mountinfo: ... mount-point ... - fstype source options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, fstype := strings.Fields(pre), strings.Fields(post)
		if len(fields) >= 5 && len(fstype) > 0 && (fstype[0] == "cgroup" || fstype[0] == "cgroup2") {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	sort.Strings(out)
	return out, sc.Err()
}

// daemonsCgroup holds containerd and the kubelet (and so the shims containerd starts),
// beside the kubepods tree the kubelet makes under the node's cgroup.
const daemonsCgroup = "daemons"

// createCgroups makes the node's cgroup and its daemons child in every hierarchy, with
// cpuset's cpus and mems copied from the parent (a v1 cpuset takes no task without). It
// refuses a cgroup that still holds processes: an earlier node of that name is running.
func createCgroups(name string) error {
	if pids := cgroupPids(name); len(pids) > 0 {
		return fmt.Errorf("cgroup %s holds processes %v: a node of that name still runs (tear it down first)", name, pids)
	}
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	if len(hs) == 0 {
		return fmt.Errorf("no cgroup hierarchy mounted")
	}
	for _, h := range hs {
		parent := h
		for _, dir := range []string{filepath.Join(h, name), filepath.Join(h, name, daemonsCgroup)} {
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("cgroup %s: %w", dir, err)
			}
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(parent, f))
				if err != nil {
					continue // not a cpuset hierarchy
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("cgroup %s: %s: %w", dir, f, err)
				}
			}
			parent = dir
		}
	}
	return nil
}

// joinCgroups moves pid into the node's daemons cgroup in every hierarchy.
func joinCgroups(name string, pid int) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		procs := filepath.Join(h, name, daemonsCgroup, "cgroup.procs")
		if err := os.WriteFile(procs, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("move %d to %s: %w", pid, procs, err)
		}
	}
	return nil
}

// cgroupPids lists every process in the node's cgroup trees, in any hierarchy.
func cgroupPids(name string) []int {
	hs, _ := hierarchies()
	seen := map[int]bool{}
	for _, h := range hs {
		root := filepath.Join(h, name)
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	pids := make([]int, 0, len(seen))
	for p := range seen {
		pids = append(pids, p)
	}
	sort.Ints(pids)
	return pids
}

// killCgroups kills every process of the node: frozen first so none can fork while the
// others die, then SIGKILL, then thawed so the kills land. It returns once the cgroups are
// empty or says which processes are left.
func killCgroups(name string, timeout time.Duration) error {
	freezer := ""
	if hs, _ := hierarchies(); len(hs) > 0 {
		for _, h := range hs {
			if _, err := os.Stat(filepath.Join(h, name, "freezer.state")); err == nil {
				freezer = filepath.Join(h, name, "freezer.state")
			}
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		pids := cgroupPids(name)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: processes %v still alive after %s", name, pids, timeout)
		}
		if freezer != "" {
			_ = os.WriteFile(freezer, []byte("FROZEN"), 0o644)
			pids = cgroupPids(name)
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if freezer != "" {
			_ = os.WriteFile(freezer, []byte("THAWED"), 0o644)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// removeCgroups removes the node's cgroup trees in every hierarchy, deepest first; a
// cgroup that just lost its last process may still be busy for a moment.
func removeCgroups(name string, timeout time.Duration) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	var dirs []string
	for _, h := range hs {
		_ = filepath.WalkDir(filepath.Join(h, name), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	deadline := time.Now().Add(timeout)
	for _, d := range dirs {
		for {
			err := os.Remove(d)
			if err == nil || errors.Is(err, fs.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("remove cgroup %s: %w", d, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}
