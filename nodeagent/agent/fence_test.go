package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/gateway"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/test/require"
)

// memFence is a kernel.Fencer in memory whose writes fail while it is broken, keeping
// what it had, as a failed nftables transaction does.
type memFence struct {
	mu     sync.Mutex
	until  time.Time
	broken error
}

func (f *memFence) Fence(_ context.Context, _ uint16, until time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken != nil {
		return f.broken
	}
	f.until = until
	return nil
}

func (f *memFence) Unfence(context.Context) error {
	return f.Fence(context.Background(), 0, time.Time{})
}

func (f *memFence) breakWith(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.broken = err
}

// fencedKernel is an agent's kernel with a fence beside it.
type fencedKernel struct {
	kernel.Kernel
	kernel.Fencer
}

// withMemFences gives every agent started with it a memFence of its own, by node name.
func withMemFences(fences map[string]*memFence) func(*Config) {
	var mu sync.Mutex
	return func(c *Config) {
		mu.Lock()
		defer mu.Unlock()
		f := &memFence{}
		fences[c.NodeName] = f
		c.Kernel = fencedKernel{Kernel: c.Kernel, Fencer: f}
	}
}

// neverActive fails the test if node holds the Lease or its Gateway says active at any
// moment of d.
func neverActive(t *testing.T, c client.Client, node string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if h := leaseHolder(t, c); h == node {
			t.Fatalf("%s holds the gateway Lease while its fence cannot be written", node)
		}
		if gatewayIs(c, node, straitv1.HAActive)() == nil {
			t.Fatalf("%s's Gateway says active while its fence cannot be written", node)
		}
	}
}

// TestUnwritableFenceHandsTheGatewayOver: the active gateway whose fence write fails
// stops claiming the gateway (the Lease goes to the standby, its Gateway says passive),
// counts the failure, and while its fence stays broken it takes the gateway no more,
// not even when it is the only candidate left; once the fence can be written it does.
func TestUnwritableFenceHandsTheGatewayOver(t *testing.T) {
	cfg, _ := startAPIServer(t)
	c := seedMember(t, cfg)
	fences := map[string]*memFence{}
	agents, holder, standby := startGatewayPair(t, cfg, c, withMemFences(fences))

	fences[holder].breakWith(errors.New("injected: the fence cannot be written"))
	took := require.Eventually(t, 3*time.Second, "the standby takes the gateway over", holdsAndSays(t, c, standby, holder))
	t.Logf("%s's fence broke; %s holds the gateway and both Gateways say so %v later", holder, standby, took.Round(time.Millisecond))
	if n := gathered(t, agents[holder].metrics)["strait_agent_fence_errors_total"]; n == 0 {
		t.Errorf("%s counted no fence error", holder)
	}
	neverActive(t, c, holder, 3*gateway.FastTiming().LeaseDuration)

	agents[standby].stop()
	neverActive(t, c, holder, 3*gateway.FastTiming().LeaseDuration)

	fences[holder].breakWith(nil)
	require.Eventually(t, 3*time.Second, holder+" takes the gateway once its fence works", func() error {
		if h := leaseHolder(t, c); h != holder {
			return fmt.Errorf("the Lease's holder is %q", h)
		}
		return gatewayIs(c, holder, straitv1.HAActive)()
	})
}

// TestFenceHeldByAnotherProcessKeepsTheNodeOffTheGateway runs the agent on a real
// kernel (a network namespace) whose fence table ip strait-fence another process owns
// (nftables' owner flag: only that process's socket may change it, and the table goes
// with it), so that every fence write fails. The node is the only gateway-capable one
// running, and it must not take the gateway; once the owner exits it does, with its
// cable port in the fence's set.
func TestFenceHeldByAnotherProcessKeepsTheNodeOffTheGateway(t *testing.T) {
	require.Root(t, "nft")
	cfg, _ := startAPIServer(t)
	c := seedMember(t, cfg)
	node, lan := netns.New(t, "gw1"), netns.New(t, "lan")
	netns.Veth(t, node, "eth0", lan, "eth0")
	netns.Veth(t, node, "wan", lan, "wan")
	node.AddAddr(t, "eth0", "10.0.1.1/24")
	node.AddAddr(t, "wan", "203.0.113.1/24")

	owner := ownFenceTable(t, node)
	k, err := kernel.NewLinux(node.Handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	if err := k.Fence(context.Background(), 4500, time.Now().Add(time.Second)); err == nil {
		t.Fatal("a fence write into a table another process owns succeeded: the test injects no fault")
	}

	ra := startAgent(t, cfg, "gw1", "10.0.1.1", func(c *Config) { c.Kernel = k })
	require.Eventually(t, 5*time.Second, "gw1 publishes its Gateway", gatewayIs(c, "gw1", straitv1.HAPassive))
	neverActive(t, c, "gw1", 3*gateway.FastTiming().LeaseDuration)
	if n := gathered(t, ra.metrics)["strait_agent_fence_errors_total"]; n == 0 {
		t.Errorf("gw1 counted no fence error")
	}

	owner.release()
	require.Eventually(t, 5*time.Second, "gw1 takes the gateway once its fence can be written", func() error {
		if h := leaseHolder(t, c); h != "gw1" {
			return fmt.Errorf("the Lease's holder is %q", h)
		}
		return gatewayIs(c, "gw1", straitv1.HAActive)()
	})
	out := node.Run(t, "nft", "list", "set", "ip", kernel.FenceTable, "term")
	if !strings.Contains(out, "4500 timeout") {
		t.Errorf("the active gateway's fence holds no term for its cable port 4500:\n%s", out)
	}
}

// tableOwner is an nft process holding a table with the owner flag.
type tableOwner struct {
	stdin io.WriteCloser
	done  chan error
	once  sync.Once
}

// ownFenceTable has an `nft -i` in ns create table ip strait-fence with the owner flag
// and keep it (the table lives as long as that process's netlink socket).
func ownFenceTable(t *testing.T, ns *netns.NS) *tableOwner {
	t.Helper()
	cmd := ns.Command(context.Background(), "nft", "-i")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	o := &tableOwner{stdin: stdin, done: make(chan error, 1)}
	go func() { o.done <- cmd.Wait() }()
	t.Cleanup(o.release)
	if _, err := fmt.Fprintf(stdin, "add table ip %s { flags owner; }\n", kernel.FenceTable); err != nil {
		t.Fatal(err)
	}
	require.Eventually(t, 5*time.Second, "nft -i owns the fence table", func() error {
		got, err := ns.Command(context.Background(), "nft", "list", "table", "ip", kernel.FenceTable).CombinedOutput()
		if err != nil || !strings.Contains(string(got), "flags owner") {
			return fmt.Errorf("nft list table: %w: %s (nft -i: %s)", err, got, out.String())
		}
		return nil
	})
	return o
}

// release ends the owner; its table goes with its socket.
func (o *tableOwner) release() {
	o.once.Do(func() {
		_ = o.stdin.Close()
		select {
		case <-o.done:
		case <-time.After(5 * time.Second):
		}
	})
}
