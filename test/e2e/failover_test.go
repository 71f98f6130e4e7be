package e2e

import (
	"fmt"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/netns"
	"github.com/straitnet/strait/test/require"
)

// prober tries something (a GET, a lookup) at a fixed interval, counts the tries and
// the answers, and keeps the longest time without an answer.
type prober struct {
	stop chan struct{}
	done sync.WaitGroup

	mu      sync.Mutex
	last    time.Time // last answer
	maxGap  time.Duration
	gapEnd  time.Time // the answer that ended the longest gap
	answers int
	tries   int
	// since and first: the first answer after since (recoveredAfter).
	since, first time.Time
}

// startProber GETs a whereami from a pod every 50 ms (each try gives up after 300 ms).
func startProber(ns, hostPort string) *prober {
	return startProbing(50*time.Millisecond, func() error {
		_, err := labtest.TryWhereamiWithin(ns, hostPort, 300*time.Millisecond)
		return err
	})
}

func startProbing(every time.Duration, try func() error) *prober {
	p := &prober{stop: make(chan struct{}), last: time.Now()}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		for {
			select {
			case <-p.stop:
				return
			case <-time.After(every):
			}
			err := try()
			p.mu.Lock()
			p.tries++
			if err == nil {
				now := time.Now()
				if gap := now.Sub(p.last); gap > p.maxGap {
					p.maxGap, p.gapEnd = gap, now
				}
				p.last, p.answers = now, p.answers+1
				if !p.since.IsZero() && p.first.IsZero() {
					p.first = now
				}
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// answeredSince says whether an answer came after t.
func (p *prober) answeredSince(t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last.After(t)
}

// markOutage notes the start of an outage: recoveredAfter measures from now.
func (p *prober) markOutage() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.since, p.first = time.Now(), time.Time{}
	return p.since
}

// recoveredAfter waits up to two minutes for the first answer after markOutage and
// returns how long after the mark it came.
func (p *prober) recoveredAfter(t testing.TB, what string) time.Duration {
	t.Helper()
	var took time.Duration
	require.Eventually(t, 2*time.Minute, what, func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.first.IsZero() {
			return fmt.Errorf("no answer since %s", p.since.Format(time.TimeOnly))
		}
		took = p.first.Sub(p.since)
		return nil
	})
	return took
}

// counts are the tries and the answers so far.
func (p *prober) counts() (tries, answers int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tries, p.answers
}

// restart forgets the gaps so far, as if the prober started now.
func (p *prober) restart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.maxGap = time.Now(), 0
}

// gap stops the prober and returns the longest time without an answer, counting the
// time since the last answer too (an outage that lasts until the end).
func (p *prober) gap() time.Duration {
	close(p.stop)
	p.done.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(p.maxGap, time.Since(p.last))
}

// longest says when the longest time without an answer began and ended, for a failing
// test to match with logs (a zero end: it lasted until the prober stopped).
func (p *prober) longest() (from, to time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if since := time.Since(p.last); since > p.maxGap {
		return p.last, time.Time{}
	}
	return p.gapEnd.Add(-p.maxGap), p.gapEnd
}

// failOver stops the agent container on the cluster's active gateway with sig while
// c1's client GETs c2's whereami pod and that node's kubelet is paused, waits until
// another gateway is active and the GETs are answered again, resumes the kubelet, waits
// for it to restart the stopped agent and returns the longest time without an answer.
func failOver(t testing.TB, cluster string, sig syscall.Signal) time.Duration {
	t.Helper()
	// Both ends on plain nodes: a pod on the node whose agent is stopped stays cut off
	// until its agent is back (nothing re-points that node), as in a real cluster until
	// the kubelet restarts it.
	src, target := crossTraffic(t)
	old := env.ActiveGateway(t, cluster).Name
	agent := env.AgentPod(t, cluster, old)
	restarts := labtest.Restarts(agent, "agent")
	// Without its kubelet, the node does not restart the agent at once: a restarted agent
	// takes its own node's Lease back, and the other gateway would never be needed.
	resume := env.PauseKubelet(t, cluster, old)
	devices := vxlanIndexes(t, cluster)
	p := startProber(src.ns, target)
	time.Sleep(300 * time.Millisecond)
	stopped := time.Now()
	env.SignalContainer(t, agent, "agent", sig)
	var taken topology.Node
	require.Eventually(t, converge, fmt.Sprintf("%s: traffic after %s of %s's agent", cluster, sig, old), func() error {
		if taken = env.ActiveGateway(t, cluster); taken.Name == old {
			return fmt.Errorf("%s still active", old)
		}
		if !p.answeredSince(stopped.Add(200 * time.Millisecond)) {
			return fmt.Errorf("no answer from %s since the %s", target, sig)
		}
		return nil
	})
	time.Sleep(500 * time.Millisecond)
	gap := p.gap()
	// Taking over converges the standby's vx-strait; it must not make it again (a pass
	// that saw the node's own Lease before its elector said so used to tear it down).
	if was, now := devices[taken.Name], vxlanIndexes(t, cluster)[taken.Name]; was != now {
		t.Errorf("%s's %s was made again while it took over (index %d, was %d)", taken.Name, route.VXLANDevice, now, was)
	}
	resume()
	env.WaitRestarted(t, cluster, agent, "agent", restarts, 2*time.Minute)
	return gap
}

// TestGatewayFailover: the active gateway's agent crashes (SIGKILL: its Lease must
// expire) or stops (SIGTERM: it releases the Lease); the other gateway takes over and
// cross-cluster traffic resumes, in either cluster.
func TestGatewayFailover(t *testing.T) {
	env.Require(t)
	for _, tc := range []struct {
		cluster string
		sig     syscall.Signal
	}{{"c2", syscall.SIGKILL}, {"c2", syscall.SIGTERM}, {"c1", syscall.SIGKILL}} {
		t.Run(fmt.Sprintf("%s %s", tc.cluster, tc.sig), func(t *testing.T) {
			gap := failOver(t, tc.cluster, tc.sig)
			t.Logf("%s's active gateway's agent got %s: longest time without an answer %s", tc.cluster, tc.sig, gap.Round(time.Millisecond))
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
	require.Eventually(t, converge, standby.Name+": "+route.VXLANDevice+" made again", func() (err error) {
		after, err = mac()
		return err
	})
	if after != before {
		t.Errorf("%s's %s came back with MAC %s, was %s", standby.Name, route.VXLANDevice, after, before)
	}
	gap := failOver(t, "c2", syscall.SIGKILL)
	t.Logf("c2's gateway %s took over with its %s made again: longest time without an answer %s",
		standby.Name, route.VXLANDevice, gap.Round(time.Millisecond))
	if gap > 2*time.Second {
		logCablePaths(t)
		t.Errorf("c1 → c2 went %s without an answer after a failover to %s, whose %s had been made again",
			gap.Round(time.Millisecond), standby.Name, route.VXLANDevice)
	}
}

// BenchmarkGatewayFailover: the gap in c1 → c2 traffic when c2's active gateway agent
// crashes and when it stops gracefully.
func BenchmarkGatewayFailover(b *testing.B) {
	env.Require(b)
	var crash, graceful time.Duration
	for i := range b.N {
		for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
			gap := failOver(b, "c2", sig)
			b.Logf("round %d, c2's active gateway agent got %s: longest time without an answer %s", i+1, sig, gap.Round(time.Millisecond))
			if gap > 2*time.Second {
				for _, c := range members() {
					b.Logf("%s's agents, last lines:\n%s", c, env.StraitLogs(b, c, labtest.AgentApp, "agent", 30))
				}
			}
			if sig == syscall.SIGKILL {
				crash += gap
			} else {
				graceful += gap
			}
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
	src := sourcePods(t, "c1")[0]
	target := net.JoinHostPort(env.PodOn(t, "c2", nodeOfKind(t, "c2", false), whereamiImage).Status.PodIP, "8080")
	for _, gateway := range []bool{false, true} {
		node := nodeOfKind(t, "c2", false)
		if gateway {
			node = env.ActiveGateway(t, "c2").Name
		}
		t.Run(map[bool]string{false: "plain node", true: "active gateway"}[gateway], func(t *testing.T) {
			require.Eventually(t, converge, "c1 → c2 "+target, func() error {
				_, err := labtest.TryWhereami(src.ns, target)
				return err
			})
			agent := env.AgentPod(t, "c2", node)
			restarts := labtest.Restarts(agent, "agent")
			p := startProber(src.ns, target)
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
