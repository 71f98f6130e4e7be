package netns

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/test/require"
)

func TestVethPingAndTCP(t *testing.T) {
	require.Root(t)
	a, b := New(t, "a"), New(t, "b")
	Veth(t, a, "eth0", b, "eth0")
	a.AddAddr(t, "eth0", "10.99.0.1/24")
	b.AddAddr(t, "eth0", "10.99.0.2/24")
	if _, err := a.Ping(Addr("10.99.0.2"), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	b.ServeEcho(t, "10.99.0.2:7000")
	got, err := a.WhoAmI("10.99.0.2:7000", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got != "10.99.0.1" {
		t.Fatalf("server saw %s, want 10.99.0.1", got)
	}
}

// TestFailingTestCleansUp runs a test that fails half-way through building namespaces in
// a child process, then checks that none of its namespaces is left.
func TestFailingTestCleansUp(t *testing.T) {
	require.Root(t)
	if os.Getenv("STRAIT_NETNS_FAIL_CHILD") != "" {
		return
	}
	marker := fmt.Sprintf("failing%d", os.Getpid())
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFailsMidway$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STRAIT_NETNS_FAIL_CHILD="+marker)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "failing on purpose") {
		t.Fatalf("the child test should have failed on purpose: %v\n%s", err, out)
	}
	entries, _ := os.ReadDir(RunDir)
	for _, e := range entries {
		if strings.Contains(e.Name(), marker) {
			t.Errorf("namespace %s left behind by a failing test", e.Name())
		}
	}
}

func TestHelperFailsMidway(t *testing.T) {
	marker := os.Getenv("STRAIT_NETNS_FAIL_CHILD")
	if marker == "" {
		t.Skip("run by TestFailingTestCleansUp")
	}
	a, b := New(t, marker+"-a"), New(t, marker+"-b")
	Veth(t, a, "eth0", b, "eth0")
	t.Fatal("failing on purpose")
}
