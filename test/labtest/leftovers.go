package labtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/topology"
)

// labMarks are what makes a process the lab's, as a person would look for it after "lab
// down": its network namespace is one of the lab's (by inode, noted before they go: a
// process keeps a deleted namespace alive), its cgroup is one of the lab's nodes', or its
// working directory is under the lab's state directory.
type labMarks struct {
	namespaces map[uint64]string
	cgroups    []string
	stateDir   string
}

// markLab notes the marks of the lab that is up (t may be nil: no node cgroups then).
func markLab(t *topology.Lab, stateDir string) labMarks {
	m := labMarks{namespaces: map[uint64]string{}, stateDir: filepath.Clean(stateDir)}
	names, _ := netns.List(topology.Prefix)
	for _, ns := range names {
		var st syscall.Stat_t
		if syscall.Stat(netns.Path(ns), &st) == nil {
			m.namespaces[st.Ino] = ns
		}
	}
	if t != nil {
		for _, c := range t.Clusters {
			for _, n := range c.Nodes {
				m.cgroups = append(m.cgroups, "/strait-node-"+n.Name)
			}
		}
		if t.HubNode != nil {
			m.cgroups = append(m.cgroups, "/strait-node-"+t.HubNode.Name)
		}
	}
	return m
}

// running lists the live processes (zombies have exited) that bear a mark of the lab,
// this one excepted, each with its command line and the mark.
func (m labMarks) running() []string {
	var out []string
	for _, pid := range netns.Processes() {
		proc := "/proc/" + strconv.Itoa(pid)
		var marks []string
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join(proc, "ns", "net"), &st) == nil && m.namespaces[st.Ino] != "" {
			marks = append(marks, "netns "+m.namespaces[st.Ino])
		}
		if cg, err := os.ReadFile(filepath.Join(proc, "cgroup")); err == nil {
			for _, name := range m.cgroups {
				if bytes.Contains(cg, []byte(name+"/")) || bytes.Contains(cg, []byte(name+"\n")) {
					marks = append(marks, "cgroup "+strings.TrimPrefix(name, "/"))
					break
				}
			}
		}
		if cwd, err := os.Readlink(filepath.Join(proc, "cwd")); err == nil && m.stateDir != "" &&
			(cwd == m.stateDir || strings.HasPrefix(cwd, m.stateDir+"/")) {
			marks = append(marks, "cwd "+cwd)
		}
		if len(marks) == 0 {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(proc, "cmdline"))
		out = append(out, fmt.Sprintf("pid %d %s (%s)", pid,
			strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))), strings.Join(marks, ", ")))
	}
	sort.Strings(out)
	return out
}
