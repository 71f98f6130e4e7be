package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/hostnet"
	"github.com/straitnet/strait/lab/node"
	"github.com/straitnet/strait/lab/topology"
)

// downWait bounds how long Down waits for the lab's processes to be gone once it has
// killed them.
const downWait = 20 * time.Second

// Down removes the lab: the daemon and every recorded process, every process inside an
// "sl-" namespace, the host's link into the lab (its routes go with it), every "sl-"
// namespace (their links go with them), /etc/netns/sl-* and the state directory. It
// needs no lab.json, so it also cleans up after a crash of "up". It returns only once
// every process of the lab has exited (see labProcesses), the containers' shims
// included, or downWait after it killed them, naming what still runs.
func (l *Lab) Down(ctx context.Context) error {
	var errs []error
	pids := l.state.AllPids()
	procs := l.processes(pids)
	// The daemon first, so no kubelet recreates pod namespaces while they go.
	stopped := 0
	if pid, ok := pids[daemonKey+"/daemon"]; ok && netns.Alive(pid) && isOurs(pid) {
		netns.KillAll([]int{pid}, 5*time.Second)
		stopped++
	}
	var rest []int
	for _, pid := range pids {
		if netns.Alive(pid) && isOurs(pid) {
			rest = append(rest, pid)
		}
	}
	netns.KillAll(rest, 5*time.Second)
	l.progress("stopped %d processes", len(rest)+stopped)
	// Real nodes before their namespaces: containers, shims and mounts go by the nodes'
	// cgroups and records, which need no lab.json.
	if err := node.TeardownAll(l.state.nodesDir()); err != nil {
		errs = append(errs, err)
	}
	// By its fixed name: down needs no lab.json.
	if err := hostnet.Remove(topology.HostLinkName); err != nil {
		errs = append(errs, err)
	}
	names, err := netns.List(topology.Prefix)
	if err != nil {
		errs = append(errs, err)
	}
	// Pods before nodes before LANs, so veth peers go in order (any order works).
	sort.Slice(names, func(i, j int) bool { return strings.Contains(names[i], "-p-") && !strings.Contains(names[j], "-p-") })
	for _, ns := range names {
		if err := netns.Delete(ctx, ns); err != nil {
			errs = append(errs, err)
		}
	}
	l.progress("deleted %d namespaces", len(names))
	// A SIGKILL is not an exit: a process may take a while to die, and one that forked
	// before the kill lives on in a namespace nobody names any more.
	if left, waited := procs.waitGone(downWait); len(left) > 0 {
		errs = append(errs, fmt.Errorf("%d processes of the lab still run %v after they were killed: %s",
			len(left), downWait, strings.Join(left, "; ")))
	} else if waited > time.Second {
		l.progress("the last of the lab's processes exited %.1fs after the kills", waited.Seconds())
	}
	leftover, _ := filepath.Glob(filepath.Join(netns.EtcDir, topology.Prefix+"*"))
	for _, d := range leftover {
		errs = append(errs, os.RemoveAll(d))
	}
	if l.state.Dir != "" && l.state.Dir != "/" {
		errs = append(errs, os.RemoveAll(l.state.Dir))
	}
	return errors.Join(errs...)
}

// isOurs says whether pid runs one of the lab's programs (guards against a recycled pid).
func isOurs(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	cmd := strings.ReplaceAll(string(data), "\x00", " ")
	for _, p := range []string{"etcd", "kube-", "coredns", "strait", "iperf3"} {
		if strings.Contains(cmd, p) {
			return true
		}
	}
	return false
}

// Leftovers lists what the lab would own that still exists: the host's link into the
// lab, "sl-" namespaces, /etc/netns/sl-* directories, the state directory, and processes
// inside "sl-" namespaces.
func (l *Lab) Leftovers() []string {
	var out []string
	if hostnet.Exists(topology.HostLinkName) {
		out = append(out, "host link "+topology.HostLinkName)
	}
	names, _ := netns.List(topology.Prefix)
	for _, ns := range names {
		out = append(out, "namespace "+ns)
		for _, pid := range netns.Pids(ns) {
			out = append(out, fmt.Sprintf("process %d in %s", pid, ns))
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(netns.EtcDir, topology.Prefix+"*"))
	out = append(out, dirs...)
	if _, err := os.Stat(l.state.Dir); err == nil {
		out = append(out, l.state.Dir)
	}
	for name, pid := range l.state.AllPids() {
		if netns.Alive(pid) && syscall.Kill(pid, 0) == nil && isOurs(pid) {
			out = append(out, fmt.Sprintf("process %d (%s)", pid, name))
		}
	}
	return out
}
