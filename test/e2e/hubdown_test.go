package e2e

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// TestFailoverWithTheHubDown: the data plane outlives the hub. With the hub's API server
// and strait hub stopped, c2's active gateway agent crashes; c2's other gateway takes
// over and the cable roams to it (WireGuard, one key per cluster), and traffic must then
// stay up although c1's Peer c2 still names the dead gateway: c1's periodic resyncs
// (every 30 s) used to set the endpoint back, cutting c1 → c2 for ~10 s of every 30.
func TestFailoverWithTheHubDown(t *testing.T) {
	env.Require(t)
	src, target := crossTraffic(t)
	// Whatever happens below, the lab is whole again for the next test: lab up restarts
	// the hub's API server and waits for strait hub to be ready again.
	t.Cleanup(func() { env.UpAgain(t) })
	hubs := env.StraitPods(t, topology.HubName, labtest.HubApp, "")
	pid, ok := env.Lab.State().Pid(topology.HubName, "kube-apiserver")
	if !ok {
		t.Fatal("the hub's kube-apiserver is not running")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// strait hub's pods keep running without their API server; stop them too (the
	// kubelet restarts them, and without an API server they cannot start).
	for _, h := range hubs {
		env.SignalContainer(t, h, "hub", syscall.SIGKILL)
	}
	old := env.ActiveGateway(t, "c2").Name
	agent := env.AgentPod(t, "c2", old)
	// The node's kubelet must not restart the agent: the other gateway is to take over.
	env.PauseKubelet(t, "c2", old)
	p := startProber(src.ns, target)
	killed := time.Now()
	env.SignalContainer(t, agent, "agent", syscall.SIGKILL)
	require.Eventually(t, converge, "c1 → c2 again after c2's gateway crashed, the hub down", func() error {
		if !p.answeredSince(killed.Add(200 * time.Millisecond)) {
			return fmt.Errorf("no answer from %s since the crash of %s's agent", target, old)
		}
		return nil
	})
	resumed := time.Since(killed)
	if resumed > 2*time.Second {
		// A crash failover takes about a second: show what the agents did meanwhile.
		for _, c := range members() {
			t.Logf("resumed after %s; %s's agents, last lines:\n%s", resumed.Round(time.Millisecond), c,
				env.StraitLogs(t, c, labtest.AgentApp, "agent", 25))
		}
	}
	p.restart()
	// c1's gateway agent resyncs every 30 s: at least one resync falls in the window
	// (before the fix, each cut c1 → c2 for ~10 s).
	const watch = 35 * time.Second
	time.Sleep(watch)
	gap := p.gap()
	t.Logf("hub down, c2's gateway %s crashed: traffic resumed after %s; longest gap in the %s after: %s",
		old, resumed.Round(time.Millisecond), watch, gap.Round(time.Millisecond))
	if gap > 2*time.Second {
		t.Errorf("c1 → c2 went %s without an answer after it had resumed, the hub down", gap.Round(time.Millisecond))
	}
}
