package node_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/node"
	"github.com/straitnet/strait/test/hostview"
)

// hostState is what a node must leave as it found it (test/hostview).
func hostState(t *testing.T) hostview.View {
	t.Helper()
	v, err := hostview.Take("/var/lib", "/var/log")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// assertNothingLeft checks what a user would after "lab down": no process, mount,
// cgroup, link or file of the node, and the host as before.
func assertNothingLeft(t *testing.T, state, name string, ns *netns.NS, before hostview.View) {
	t.Helper()
	if diff := before.Diff(hostState(t)); diff != "" {
		t.Errorf("host changed: %s", diff)
	}
	if procs := processesMentioning(state); len(procs) > 0 {
		t.Errorf("processes of the node still running: %v", procs)
	}
	// Teardown returns only once they have exited: none may be left in the node's
	// namespace or cgroup, the containers' shims included (their command lines need not
	// name the state directory).
	if procs := processesOf(t, ns, "strait-node-"+name); len(procs) > 0 {
		t.Errorf("processes still in the node's namespace or cgroup after its teardown returned: %v", procs)
	}
	mounts, err := os.ReadFile("/proc/thread-self/mountinfo")
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

// processesOf lists the live processes (zombies have exited) in network namespace ns or
// in cgroup name (in any hierarchy), this one excepted.
func processesOf(t *testing.T, ns *netns.NS, cgroup string) []string {
	t.Helper()
	var nsStat syscall.Stat_t
	if err := syscall.Stat(ns.Path(), &nsStat); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, pid := range netns.Processes() {
		proc := "/proc/" + strconv.Itoa(pid)
		var st syscall.Stat_t
		inNS := syscall.Stat(filepath.Join(proc, "ns", "net"), &st) == nil && st.Ino == nsStat.Ino && st.Dev == nsStat.Dev
		cg, _ := os.ReadFile(filepath.Join(proc, "cgroup"))
		inCgroup := strings.Contains(string(cg), "/"+cgroup+"/") || strings.Contains(string(cg), "/"+cgroup+"\n")
		if inNS || inCgroup {
			cmdline, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
			out = append(out, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return out
}
