package hostview

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
)

// KubeletSysctls are the host-wide sysctls a kubelet sets at start; a lab node must
// keep them from reaching the host (kernel.panic_on_oops=1 would make an oops reboot it).
var KubeletSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops", "vm/panic_on_oom",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// fixedPaths are where containerd, runc, the kubelet and CNI write unless told otherwise.
var fixedPaths = []string{"/run/containerd", "/run/runc", "/var/lib/kubelet", "/var/lib/cni", "/var/lib/containerd",
	"/var/log/pods", "/var/log/containers", "/etc/cni", "/opt/cni"}

// shared are made once by the tools that use them and kept for every later user, as
// on any host: ip(8)'s namespace directory, iptables' lock, WireGuard's socket directory.
var shared = map[string]bool{"/run/netns": true, "/run/xtables.lock": true, "/run/wireguard": true}

// View is what Take saw.
type View struct {
	Sysctls map[string]string
	Entries map[string][]string
	Exists  map[string]bool
	Cgroups []string
}

// Take reads the kubelet's sysctls, the entries at the top of each of dirs, whether each
// fixed path exists, and the nodes' cgroups (strait-node-*).
func Take(dirs ...string) (View, error) {
	v := View{Sysctls: map[string]string{}, Entries: map[string][]string{}, Exists: map[string]bool{}}
	for _, s := range KubeletSysctls {
		data, err := os.ReadFile("/proc/sys/" + s)
		if err != nil {
			return v, err
		}
		v.Sysctls[s] = strings.TrimSpace(string(data))
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			return v, err
		}
		for _, e := range entries {
			if !shared[filepath.Join(d, e.Name())] {
				v.Entries[d] = append(v.Entries[d], e.Name())
			}
		}
		sort.Strings(v.Entries[d])
	}
	for _, p := range fixedPaths {
		_, err := os.Stat(p)
		v.Exists[p] = err == nil
	}
	for _, pattern := range []string{"/sys/fs/cgroup/*/strait-node-*", "/sys/fs/cgroup/strait-node-*"} {
		found, _ := filepath.Glob(pattern)
		v.Cgroups = append(v.Cgroups, found...)
	}
	sort.Strings(v.Cgroups)
	return v, nil
}

// Diff says how after differs from v, or "": a kubelet sysctl changed, an entry of the
// dirs added or removed, a fixed path made or removed, a node's cgroup left.
func (v View) Diff(after View) string {
	var out []string
	for _, s := range KubeletSysctls {
		if v.Sysctls[s] != after.Sysctls[s] {
			out = append(out, fmt.Sprintf("sysctl %s: %s → %s", s, v.Sysctls[s], after.Sysctls[s]))
		}
	}
	for d, before := range v.Entries {
		if !reflect.DeepEqual(before, after.Entries[d]) {
			out = append(out, fmt.Sprintf("%s: %v → %v", d, before, after.Entries[d]))
		}
	}
	for _, p := range fixedPaths {
		if v.Exists[p] != after.Exists[p] {
			out = append(out, fmt.Sprintf("%s exists: %v → %v", p, v.Exists[p], after.Exists[p]))
		}
	}
	// A node cgroup the run made and left is a leftover. Those there before it (a killed
	// run's, or another lab's running beside it) are not this run's to report, whether
	// its lab removed them or not.
	if left := added(v.Cgroups, after.Cgroups); len(left) > 0 {
		out = append(out, fmt.Sprintf("node cgroups left: %v", left))
	}
	return strings.Join(out, "; ")
}

// added lists what is in after and not in before.
func added(before, after []string) []string {
	had := make(map[string]bool, len(before))
	for _, s := range before {
		had[s] = true
	}
	var out []string
	for _, s := range after {
		if !had[s] {
			out = append(out, s)
		}
	}
	return out
}
