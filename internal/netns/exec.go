package netns

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"github.com/vishvananda/netns"
)

// Do runs fn on an OS thread switched into the named namespace. Sockets opened by fn stay
// in that namespace after the thread switches back.
func Do(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// The thread is never returned to the pool if switching back fails.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		target, err := netns.GetFromPath(Path(ns))
		if err != nil {
			errc <- fmt.Errorf("namespace %s: %w", ns, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			errc <- fmt.Errorf("entering %s: %w", ns, err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err == nil {
			runtime.UnlockOSThread()
		}
		errc <- ferr
	}()
	return <-errc
}

// Dial opens a connection from inside the named namespace.
func Dial(ctx context.Context, ns, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := Do(ns, func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Start runs argv inside ns through `ip netns exec` (which also mounts /etc/netns/<ns>/*),
// detached in its own session, with output appended to logPath. It returns the pid, which
// is argv's own (ip execs it).
func Start(ns, logPath string, env []string, argv ...string) (int, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer log.Close()
	args := argv
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %v: %w", argv, err)
	}
	pid := cmd.Process.Pid
	// Reap it when it exits so it never lingers as a zombie of a long-lived parent.
	go func() { _ = cmd.Wait() }()
	return pid, nil
}
