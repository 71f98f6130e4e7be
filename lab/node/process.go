package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// component is one daemon of the node, run inside its namespaces.
type component struct {
	name string
	log  string

	mu     sync.Mutex
	exited error // set when the process ended while the node was up
	done   chan struct{}
	pid    int
}

// startComponent runs argv in the node's network and mount namespaces through nsenter,
// in its own session (it outlives its starter: a lab's nodes keep running after
// "lab up" returns), output appended to its log, and moves it into the node's daemons
// cgroup before it can start anything.
func startComponent(name string, c Config, l layout, env []string, argv ...string) (*component, error) {
	logf, err := os.OpenFile(l.log(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	args := append([]string{"--mount=" + l.mountNS(), "--net=" + c.NetNS, "--"}, argv...)
	cmd := exec.Command("nsenter", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = env
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &component{name: name, log: l.log(name), done: make(chan struct{}), pid: cmd.Process.Pid}
	if err := joinCgroups(c.cgroupName(), cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() {
		err := cmd.Wait()
		if err == nil {
			err = errors.New("exited")
		}
		p.mu.Lock()
		p.exited = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// err says why the component ended early, naming it, its log and the log's last lines;
// nil while it runs.
func (p *component) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited == nil {
		return nil
	}
	return fmt.Errorf("%s ended early (%w); log %s:\n%s", p.name, p.exited, p.log, Tail(p.log, 15))
}

// ended says whether the process has exited.
func (p *component) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitFor polls ready until it succeeds, the component ends, ctx ends or timeout passes.
func (p *component) waitFor(ctx context.Context, what string, timeout time.Duration, ready func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = ready(); last == nil {
			return nil
		}
		select {
		case <-p.done:
			return p.err()
		case <-ctx.Done():
			return fmt.Errorf("%s: %s not ready after %s: %w; log %s:\n%s", p.name, what, timeout, last, p.log, Tail(p.log, 15))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Tail is the last n lines of a log file, each indented, for an error that names a
// component and its log; or why the file cannot be read.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}
