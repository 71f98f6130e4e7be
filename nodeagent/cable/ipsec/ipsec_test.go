package ipsec_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strongswan/govici/vici"

	"github.com/straitnet/strait/nodeagent/cable/cabletest"
	"github.com/straitnet/strait/nodeagent/cable/ipsec"
)

// viciEnv hands a gateway process its charon's VICI socket.
const viciEnv = "STRAIT_TEST_VICI_SOCKET"

const port = 4599

func TestMain(m *testing.M) {
	runCharonIfChild()
	cabletest.ServeGatewayIfChild(func() (*cabletest.Agent, error) {
		d, err := ipsec.New(ipsec.Config{VICISocket: os.Getenv(viciEnv), Routing: cabletest.Routing})
		if err != nil {
			return nil, err
		}
		return &cabletest.Agent{Driver: d, Dump: func(ctx context.Context) (string, error) {
			return dumpSAs(ctx, os.Getenv(viciEnv))
		}}, nil
	})
	os.Exit(m.Run())
}

// dumpSAs lists charon's connections and SAs with their IDs (without counters), so a
// rekey or a re-established SA shows as a change.
func dumpSAs(ctx context.Context, socket string) (string, error) {
	s, err := vici.NewSession(vici.WithSocketPath(socket))
	if err != nil {
		return "", err
	}
	defer func() { _ = s.Close() }()
	var lines []string
	for m, err := range s.CallStreaming(ctx, "list-conns", "list-conn", nil) {
		if err != nil {
			return "", err
		}
		for _, name := range m.Keys() {
			lines = append(lines, "conn "+name)
		}
	}
	for m, err := range s.CallStreaming(ctx, "list-sas", "list-sa", nil) {
		if err != nil {
			return "", err
		}
		for _, name := range m.Keys() {
			sa := m.Get(name).(*vici.Message)
			line := fmt.Sprintf("ike %s #%v %v %v", name, sa.Get("uniqueid"), sa.Get("state"), sa.Get("remote-host"))
			if children, ok := sa.Get("child-sas").(*vici.Message); ok {
				for _, k := range children.Keys() {
					c := children.Get(k).(*vici.Message)
					line += fmt.Sprintf(" child %v #%v %v", c.Get("name"), c.Get("uniqueid"), c.Get("state"))
				}
			}
			lines = append(lines, line)
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n", nil
}

// charonEnv makes a re-executed test binary run the charon sidecar, as `strait charon`
// does, with its files in the directory it names.
const charonEnv = "STRAIT_TEST_CHARON_DIR"

func runCharonIfChild() {
	dir := os.Getenv(charonEnv)
	if dir == "" {
		return
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

// startCharon runs the charon sidecar in namespace ns.
func startCharon(t testing.TB, ns, dir string) (socket string, stop func()) {
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
	cmd.Env = append(os.Environ(), charonEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
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
	if err := cabletest.Eventually(10*time.Second, func() error {
		_, err := os.Stat(c.VICISocket())
		return err
	}); err != nil {
		t.Fatalf("charon did not open its VICI socket: %v", err)
	}
	return c.VICISocket(), stop
}

var suite = cabletest.Suite{
	Port:           port,
	PSK:            []byte("a pre-shared key only this test knows"),
	ConnectTimeout: 20 * time.Second,
	Setup: func(t testing.TB, _ *cabletest.Lab, s cabletest.Site) ([]string, func()) {
		socket, stop := startCharon(t, s.GatewayNS, filepath.Join(t.TempDir(), s.ClusterID))
		return []string{viciEnv + "=" + socket}, stop
	},
}

func requireCharon(t testing.TB) {
	cabletest.RequireRoot(t)
	if _, err := os.Stat(ipsec.CharonPath); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("needs strongSwan's charon: %v", err)
		}
		t.Skipf("needs strongSwan's charon: %v", err)
	}
}

func TestCable(t *testing.T) {
	requireCharon(t)
	cabletest.Run(t, suite)
}

func BenchmarkThroughput(b *testing.B) {
	requireCharon(b)
	cabletest.Throughput(b, suite)
}
