package lab

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/require"
)

// TestLabProcessesAreWaitedFor: the processes lab down must see gone are those inside
// the lab's namespaces (by inode, which outlives the namespace's name) and those in the
// session of a recorded process, its children included; waitGone kills them and returns
// once they have exited, and, out of time, names each with why it is the lab's.
func TestLabProcessesAreWaitedFor(t *testing.T) {
	require.Root(t)
	ns := netns.New(t, "labproc")
	var st syscall.Stat_t
	if err := syscall.Stat(ns.Path(), &st); err != nil {
		t.Fatal(err)
	}
	start := func(argv ...string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd
	}
	inNS := start("ip", "netns", "exec", ns.Name, "sleep", "600")
	// A recorded process whose child (as the lab daemon's git server children) stays in
	// its session.
	daemon := start("sh", "-c", "sleep 600 & exec sleep 601")
	other := start("sleep", "602") // not the lab's
	p := labProcesses{namespaces: map[uint64]string{st.Ino: ns.Name}, sessions: map[int]string{daemon.Process.Pid: "_lab/daemon"}}

	// Once ip and sh have exec'd and forked: the one in the namespace and two in the
	// daemon's session.
	wants := []string{"sleep 600 (in network namespace " + ns.Name + ")", "sleep 600 (in the session of _lab/daemon)",
		"sleep 601 (in the session of _lab/daemon)"}
	var joined string
	if _, err := require.Within(5*time.Second, func() error {
		_, got := p.list()
		joined = strings.Join(got, "\n")
		for _, want := range wants {
			if len(got) != len(wants) || !strings.Contains(joined, want) {
				return fmt.Errorf("lab processes:\n%s\nwant %d, among them %q", joined, len(wants), want)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(joined, "sleep 602") {
		t.Errorf("a process of neither the namespace nor the session counted as the lab's:\n%s", joined)
	}

	// Out of time before the kills land, it names what still runs.
	if left, _ := p.waitGone(0); len(left) == 0 {
		t.Error("waitGone(0) named nothing left, with three processes killed that instant")
	}
	left, took := p.waitGone(5 * time.Second)
	if len(left) > 0 {
		t.Fatalf("still running after %v: %v", took, left)
	}
	for _, c := range []*exec.Cmd{inNS, daemon} {
		if netns.Alive(c.Process.Pid) {
			t.Errorf("pid %d (%v) still runs after waitGone returned", c.Process.Pid, c.Args)
		}
	}
	if !netns.Alive(other.Process.Pid) {
		t.Errorf("waitGone killed pid %d, which is not the lab's", other.Process.Pid)
	}
}
