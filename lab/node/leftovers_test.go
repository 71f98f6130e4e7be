package node_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/straitnet/strait/lab/node"
	"github.com/straitnet/strait/test/netns"
)

// hostView is what a node must leave as it found it: the host-wide sysctls the kubelet
// sets, the top of /var/lib and /var/log, and the fixed paths containerd and the kubelet
// write to.
type hostView struct {
	Sysctls map[string]string
	Entries map[string][]string
	Exists  map[string]bool
}

func hostState(t *testing.T) hostView {
	v := hostView{Sysctls: map[string]string{}, Entries: map[string][]string{}, Exists: map[string]bool{}}
	for _, s := range []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops", "vm/panic_on_oom",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"} {
		data, err := os.ReadFile("/proc/sys/" + s)
		if err != nil {
			t.Fatal(err)
		}
		v.Sysctls[s] = strings.TrimSpace(string(data))
	}
	for _, d := range []string{"/var/lib", "/var/log"} {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			v.Entries[d] = append(v.Entries[d], e.Name())
		}
		sort.Strings(v.Entries[d])
	}
	for _, p := range []string{"/run/containerd", "/run/runc", "/var/lib/kubelet", "/var/lib/cni", "/var/lib/containerd",
		"/var/log/pods", "/var/log/containers", "/etc/cni", "/opt/cni"} {
		_, err := os.Stat(p)
		v.Exists[p] = err == nil
	}
	return v
}

// assertNothingLeft checks what a user would after "lab down": no process, mount,
// cgroup, link or file of the node, and the host as before.
func assertNothingLeft(t *testing.T, state, name string, ns *netns.NS, before hostView) {
	t.Helper()
	if after := hostState(t); !reflect.DeepEqual(before, after) {
		t.Errorf("host changed:\nbefore %+v\nafter  %+v", before, after)
	}
	if procs := processesMentioning(state); len(procs) > 0 {
		t.Errorf("processes of the node still running: %v", procs)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), state) {
		t.Errorf("mounts under %s remain", state)
	}
	if cg, _ := filepath.Glob("/sys/fs/cgroup/*/strait-node-" + name); len(cg) > 0 {
		t.Errorf("cgroups remain: %v", cg)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("state directory %s remains (%v)", state, err)
	}
	if _, err := ns.NL.LinkByName(node.Bridge); err == nil {
		t.Errorf("bridge %s remains in %s", node.Bridge, ns.Name)
	}
	links, err := ns.NL.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if _, ok := l.(*netlink.Veth); ok && strings.HasPrefix(l.Attrs().Name, "veth") {
			t.Errorf("pod veth %s remains in %s", l.Attrs().Name, ns.Name)
		}
	}
}

// processesMentioning lists processes whose command line names path (the daemons, the
// shims: every one of them is given a path under the node's state directory).
func processesMentioning(path string) []string {
	var out []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(cmdline), path) {
			out = append(out, fmt.Sprintf("%s %s", d.Name(), strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return out
}
