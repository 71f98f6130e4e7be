package e2e

import (
	"fmt"
	"net"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/netns"
	"github.com/straitnet/strait/test/require"
)

// Failover bounds, from the signal to the agent until c1's GETs to c2 are answered
// again and at every later moment of the watch (issue 24). Today a crash costs
// 1.1-1.2 s (the 1 s Lease runs out, then the new gateway converges) and a graceful
// stop 0.1-0.4 s (the released Lease is taken at once); the bounds leave headroom for
// this shared two-core machine and stay far under Submariner's 15 s Lease, so a longer
// Lease, a missed release or a handover that remakes the data plane breaks them.
const (
	crashFailoverBound    = 3 * time.Second
	gracefulFailoverBound = time.Second
)

// failoverBound is the bound for a stop of the agent with sig.
func failoverBound(sig syscall.Signal) time.Duration {
	if sig == syscall.SIGTERM {
		return gracefulFailoverBound
	}
	return crashFailoverBound
}

// handover is one failover a test caused: the gateway whose agent it stopped, the one
// that took over, and what c1's client saw from the signal on.
type handover struct {
	cluster, from, to string
	outage            outage
	// agent is the stopped agent's pod and restarts its container's count before.
	agent    corev1.Pod
	restarts int32
}

// stopActiveAgent stops the agent container on the cluster's active gateway with sig
// while c1's client GETs c2's whereami pod and that node's kubelet is paused, waits
// until another gateway is active and a GET sent after the signal is answered, and
// measures the outage from the signal. It resumes the kubelet before it returns;
// waitBack waits for the stopped agent to run again.
func stopActiveAgent(t testing.TB, cluster string, sig syscall.Signal) handover {
	t.Helper()
	// Both ends on plain nodes: a pod on the node whose agent is stopped stays cut off
	// until its agent is back (nothing re-points that node), as in a real cluster until
	// the kubelet restarts it.
	src, target := crossTraffic(t)
	h := handover{cluster: cluster, from: env.ActiveGateway(t, cluster).Name}
	h.agent = env.AgentPod(t, cluster, h.from)
	h.restarts = labtest.Restarts(h.agent, "agent")
	// Without its kubelet, the node does not restart the agent at once: a restarted agent
	// takes its own node's Lease back, and the other gateway would never be needed.
	resume := env.PauseKubelet(t, cluster, h.from)
	defer resume()
	devices := vxlanIndexes(t, cluster)
	p := startProber(src.NS, target)
	time.Sleep(300 * time.Millisecond)
	env.SignalContainer(t, h.agent, "agent", sig)
	fault := time.Now()
	var taken topology.Node
	if _, err := require.Within(labtest.Converge, func() error {
		if taken = env.ActiveGateway(t, cluster); taken.Name == h.from {
			return fmt.Errorf("%s still active", h.from)
		}
		if !p.answeredAfter(fault) {
			return fmt.Errorf("no answer from %s since the %s", target, sig)
		}
		return nil
	}); err != nil {
		logAgents(t)
		t.Fatalf("%s: traffic after %s of %s's agent: %v; %s", cluster, sig, h.from, err, p.since(fault))
	}
	// Half a second more: traffic that comes back and stops again is an outage too.
	time.Sleep(500 * time.Millisecond)
	h.to, h.outage = taken.Name, p.since(fault)
	// Taking over converges the standby's vx-strait; it must not make it again (a pass
	// that saw the node's own Lease before its elector said so used to tear it down).
	if was, now := devices[taken.Name], vxlanIndexes(t, cluster)[taken.Name]; was != now {
		t.Errorf("%s's %s was made again while it took over (index %d, was %d)", taken.Name, route.VXLANDevice, now, was)
	}
	return h
}

// waitBack waits until the kubelet has restarted the stopped agent and its pod is
// ready, a standby again.
func (h handover) waitBack(t testing.TB) {
	t.Helper()
	env.WaitRestarted(t, h.cluster, h.agent, "agent", h.restarts, 2*time.Minute)
}

// failOver is one stopActiveAgent, its outage bounded by failoverBound, once the
// stopped agent is back.
func failOver(t testing.TB, cluster string, sig syscall.Signal) handover {
	t.Helper()
	h := stopActiveAgent(t, cluster, sig)
	t.Logf("%s: %s's agent %s, %s took over: %s", cluster, h.from, sig, h.to, h.outage)
	if !boundOutage(t, fmt.Sprintf("%s: c1 → c2 after %s's agent was %s", cluster, h.from, sig), h.outage, failoverBound(sig)) {
		logAgents(t)
	}
	h.waitBack(t)
	return h
}

// logAgents logs the last lines of every member's agents, for a failing bound.
func logAgents(t testing.TB) {
	t.Helper()
	for _, c := range members() {
		t.Logf("%s's agents, last lines:\n%s", c, env.StraitLogs(t, c, labtest.AgentApp, "agent", 30))
	}
}

// TestGatewayFailover: the active gateway's agent crashes (SIGKILL: its Lease must
// expire) or stops (SIGTERM: it releases the Lease); the other gateway takes over and
// cross-cluster traffic resumes within the failover bound, in either cluster.
func TestGatewayFailover(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		cluster string
		sig     syscall.Signal
	}{{"c2", syscall.SIGKILL}, {"c2", syscall.SIGTERM}, {"c1", syscall.SIGKILL}} {
		t.Run(fmt.Sprintf("%s %s", tc.cluster, tc.sig), func(t *testing.T) {
			failOver(t, tc.cluster, tc.sig)
		})
	}
}

// vxlanDevice is the vx-strait link in network namespace ns.
func vxlanDevice(ns string) (lk netlink.Link, err error) {
	err = netns.Do(ns, func() error {
		lk, err = netlink.LinkByName(route.VXLANDevice)
		return err
	})
	return lk, err
}

// vxlanIndexes are the interface indexes of vx-strait on the cluster's gateway nodes (0:
// none), to tell a device that was made again from one that was kept.
func vxlanIndexes(t testing.TB, cluster string) map[string]int {
	t.Helper()
	cl, ok := env.Topo.Cluster(cluster)
	if !ok {
		t.Fatalf("no cluster %s in the lab", cluster)
	}
	out := map[string]int{}
	for _, n := range cl.Nodes {
		if !n.Gateway {
			continue
		}
		if lk, err := vxlanDevice(n.Namespace); err == nil {
			out[n.Name] = lk.Attrs().Index
		}
	}
	return out
}

// TestFailoverToARemadeGateway: the standby's vx-strait is made again (an agent that
// changed the device, a reboot) before it takes over. Plain nodes must reach it at
// once: with the kernel's random MAC, c2's plain node kept sending c1's replies to the
// device's old MAC and the new gateway dropped them for 9.5-25 s (its neighbor entry
// had to go through DELAY and PROBE). The device comes back with the same MAC, and
// plain nodes hold a permanent neighbor entry for the active gateway.
func TestFailoverToARemadeGateway(t *testing.T) {
	env.Require(t)
	crossTraffic(t)
	active := env.ActiveGateway(t, "c2")
	cl, _ := env.Topo.Cluster("c2")
	var standby topology.Node
	for _, n := range cl.Nodes {
		if n.Gateway && n.Name != active.Name {
			standby = n
		}
	}
	if standby.Name == "" {
		t.Fatal("c2 has no standby gateway")
	}
	mac := func() (string, error) {
		lk, err := vxlanDevice(standby.Namespace)
		if err != nil {
			return "", err
		}
		return lk.Attrs().HardwareAddr.String(), nil
	}
	before, err := mac()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "-n", standby.Namespace, "link", "del", route.VXLANDevice).CombinedOutput(); err != nil {
		t.Fatalf("delete %s on %s: %v: %s", route.VXLANDevice, standby.Name, err, out)
	}
	var after string
	require.Eventually(t, labtest.Converge, standby.Name+": "+route.VXLANDevice+" made again", func() (err error) {
		after, err = mac()
		return err
	})
	if after != before {
		t.Errorf("%s's %s came back with MAC %s, was %s", standby.Name, route.VXLANDevice, after, before)
	}
	// Stricter than any crash: the remade device is the whole point.
	h := stopActiveAgent(t, "c2", syscall.SIGKILL)
	t.Logf("c2's gateway %s took over from %s with its %s made again: %s", h.to, h.from, route.VXLANDevice, h.outage)
	if !boundOutage(t, fmt.Sprintf("c1 → c2 after a failover to %s, whose %s had been made again", h.to, route.VXLANDevice), h.outage, 2*time.Second) {
		logCablePaths(t)
	}
	h.waitBack(t)
}

// BenchmarkGatewayFailover: the longest time without an answer c1 → c2, from the signal
// on, when c2's active gateway agent crashes and when it stops gracefully.
func BenchmarkGatewayFailover(b *testing.B) {
	env.Require(b)
	var crash, graceful time.Duration
	for i := range b.N {
		for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
			h := stopActiveAgent(b, "c2", sig)
			gap := h.outage.longest
			b.Logf("round %d, c2's active gateway agent got %s: %s", i+1, sig, h.outage)
			if gap > failoverBound(sig) {
				logAgents(b)
			}
			if sig == syscall.SIGKILL {
				crash += gap
			} else {
				graceful += gap
			}
			h.waitBack(b)
		}
	}
	b.ReportMetric(float64(crash.Milliseconds())/float64(b.N), "ms-gap-crash")
	b.ReportMetric(float64(graceful.Milliseconds())/float64(b.N), "ms-gap-graceful")
}

// TestAgentRestartKeepsTheDataPath: an agent that crashes is restarted by its kubelet
// and finds the node as it left it. On a plain node not one GET from c1 to c2 fails
// (the kernel keeps routing while no agent runs); on the active gateway traffic resumes
// within seconds, through the restarted agent (which takes its own node's Lease back at
// once) or the standby (when the Lease ran out first).
func TestAgentRestartKeepsTheDataPath(t *testing.T) {
	env.Require(t)
	src := env.SourcePods(t, "c1")[0]
	target := net.JoinHostPort(env.PodOn(t, "c2", env.NodeOfKind(t, "c2", false), labtest.WhereamiImage).Status.PodIP, "8080")
	for _, gateway := range []bool{false, true} {
		node := env.NodeOfKind(t, "c2", false)
		if gateway {
			node = env.ActiveGateway(t, "c2").Name
		}
		t.Run(map[bool]string{false: "plain node", true: "active gateway"}[gateway], func(t *testing.T) {
			require.Eventually(t, labtest.Converge, "c1 → c2 "+target, func() error {
				_, err := labtest.TryWhereami(src.NS, target)
				return err
			})
			agent := env.AgentPod(t, "c2", node)
			restarts := labtest.Restarts(agent, "agent")
			p := startProber(src.NS, target)
			time.Sleep(time.Second)
			env.SignalContainer(t, agent, "agent", syscall.SIGKILL)
			env.WaitRestarted(t, "c2", agent, "agent", restarts, 2*time.Minute)
			time.Sleep(2 * time.Second)
			tries, answers := p.counts()
			gap := p.gap()
			t.Logf("c2's agent on %s killed and restarted: %d GETs c1 → c2, %d answered, longest gap %s", node, tries, answers, gap.Round(time.Millisecond))
			if tries < 20 {
				t.Fatalf("only %d GETs were sent while the agent restarted", tries)
			}
			if gateway {
				t.Logf("active gateway after the restart: %s", env.ActiveGateway(t, "c2").Name)
			}
			if !gateway && answers != tries {
				t.Errorf("%d of %d GETs failed while the agent on plain node %s restarted", tries-answers, tries, node)
			}
			if gateway && gap > 5*time.Second {
				t.Errorf("c1 → c2 went %s without an answer while the active gateway's agent restarted", gap.Round(time.Millisecond))
			}
		})
	}
}
