package cabletest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/straitnet/strait/nodeagent/cable/ipsec"
	"github.com/straitnet/strait/test/require"
)

// charonDirEnv and charonPortEnv make a re-executed test binary run the charon sidecar,
// as `straitd charon --libipsec` does, with its files in the directory and IKE and
// ESP-in-UDP on the port they name.
const (
	charonDirEnv  = "STRAIT_CABLETEST_CHARON_DIR"
	charonPortEnv = "STRAIT_CABLETEST_CHARON_PORT"
)

// RunCharonIfChild must be called first in the TestMain of tests that use StartCharon. In
// a charon sidecar process it runs the sidecar until SIGINT or SIGTERM and exits; in the
// test process it returns at once.
func RunCharonIfChild() {
	dir := os.Getenv(charonDirEnv)
	if dir == "" {
		return
	}
	port, err := strconv.Atoi(os.Getenv(charonPortEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "charon sidecar port:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := ipsec.Charon{Dir: dir, NATTPort: port, Libipsec: true}
	if err := c.Run(ctx, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// RequireCharon is require.Root plus strongSwan's charon: it skips t without them, and
// fails it instead when the environment variable CI is set.
func RequireCharon(t testing.TB) {
	t.Helper()
	require.Root(t, "ping")
	if _, err := os.Stat(ipsec.CharonPath); err != nil {
		require.Skip(t, "needs strongSwan's charon: %v", err)
	}
}

// StartCharon runs the charon sidecar with kernel-libipsec in namespace ns (the test
// binary re-executed; its TestMain must call RunCharonIfChild), with its files in dir and
// IKE and ESP-in-UDP on port, and waits for its VICI socket. stop ends it (SIGINT) and
// fails t if it does not stop or leaves files in dir; it runs when t ends if not before.
// charon's log is printed when t has failed.
func StartCharon(t testing.TB, ns, dir string, port int) (socket string, stop func()) {
	t.Helper()
	c := ipsec.Charon{Dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "..", filepath.Base(dir)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), charonDirEnv+"="+dir, charonPortEnv+"="+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); _ = logFile.Close() }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("charon sidecar in %s: %v", ns, err)
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("charon sidecar in %s did not stop on SIGINT", ns)
		}
		if entries, err := os.ReadDir(dir); err != nil || len(entries) > 0 {
			t.Errorf("charon sidecar left files in %s: %v %v", dir, entries, err)
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			if log, err := os.ReadFile(logPath); err == nil {
				t.Logf("charon in %s:\n%s", ns, log)
			}
		}
	})
	// A connection, not the file: charon binds the socket before it listens, and a
	// driver that comes in between is refused.
	require.Eventually(t, 10*time.Second, "charon accepts on its VICI socket", func() error {
		conn, err := net.Dial("unix", c.VICISocket())
		if err == nil {
			_ = conn.Close()
		}
		return err
	})
	return c.VICISocket(), stop
}
