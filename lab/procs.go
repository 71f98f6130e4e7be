package lab

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/topology"
)

// labProcesses tells the lab's processes apart from the machine's: those inside one of
// its network namespaces, and those in the session of one of its recorded processes
// (each is started in a session of its own, so the lab daemon's children, such as the
// git server's CGI processes, are in its session). The namespaces are known by inode,
// noted before they are deleted: a process keeps its namespace alive after
// `ip netns del`, and then only the inode says whose it is.
type labProcesses struct {
	// namespaces maps a network namespace's inode to its name.
	namespaces map[uint64]string
	// sessions maps a recorded process's pid, its session's id, to its name.
	sessions map[int]string
}

// processes notes the lab's namespaces and its recorded processes that run (pids from
// the state directory).
func (l *Lab) processes(pids map[string]int) labProcesses {
	p := labProcesses{namespaces: map[uint64]string{}, sessions: map[int]string{}}
	names, _ := netns.List(topology.Prefix)
	for _, ns := range names {
		var st syscall.Stat_t
		if syscall.Stat(netns.Path(ns), &st) == nil {
			p.namespaces[st.Ino] = ns
		}
	}
	for name, pid := range pids {
		if netns.Alive(pid) && isOurs(pid) {
			p.sessions[pid] = name
		}
	}
	return p
}

// list names every live process of the lab (zombies have exited), this one excepted:
// "pid <pid> <command line> (<why it is the lab's>)".
func (p labProcesses) list() (pids []int, described []string) {
	for _, pid := range netns.Processes() {
		why := p.owns(pid)
		if why == "" {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		cmd := strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		if len(cmd) > 120 {
			cmd = cmd[:120] + "…"
		}
		pids = append(pids, pid)
		described = append(described, fmt.Sprintf("pid %d %s (%s)", pid, cmd, why))
	}
	sort.Strings(described)
	return pids, described
}

// owns says why pid is the lab's ("" when it is not, or has exited).
func (p labProcesses) owns(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The fields after the parenthesised command: state, ppid, pgrp, session, ...
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 4 || f[0] == "Z" {
		return ""
	}
	if sid, err := strconv.Atoi(f[3]); err == nil {
		if name, ok := p.sessions[sid]; ok {
			return "in the session of " + name
		}
	}
	var st syscall.Stat_t
	if syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &st) == nil {
		if ns, ok := p.namespaces[st.Ino]; ok {
			return "in network namespace " + ns
		}
	}
	return ""
}

// waitGone kills what is left of the lab's processes and waits until none runs, for at
// most timeout; it returns what still runs then, and how long it waited.
func (p labProcesses) waitGone(timeout time.Duration) ([]string, time.Duration) {
	start := time.Now()
	for {
		pids, left := p.list()
		if len(pids) == 0 {
			return nil, time.Since(start)
		}
		if time.Since(start) > timeout {
			return left, time.Since(start)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
