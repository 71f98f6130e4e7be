package labtest

import (
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/require"
)

// Failover bounds, from the signal to the agent until the watched GETs are answered
// again and at every later moment of the watch (issue 24). Today a crash costs 1.1-1.2 s
// (the 1 s Lease runs out, then the new gateway converges) and a graceful stop 0.1-0.4 s
// (the released Lease is taken at once); the bounds leave headroom for this shared
// two-core machine and stay far under Submariner's 15 s Lease, so a longer Lease, a
// missed release or a handover that remakes the data plane breaks them.
const (
	CrashFailoverBound    = 3 * time.Second
	GracefulFailoverBound = time.Second
)

// FailoverBound is the bound for a stop of the agent with sig.
func FailoverBound(sig syscall.Signal) time.Duration {
	if sig == syscall.SIGTERM {
		return GracefulFailoverBound
	}
	return CrashFailoverBound
}

// CrossTraffic is the first client pod of cluster from (on a plain node) and, as
// host:port, a whereami pod of cluster to on a plain node, once the one reaches the
// other. Both ends on plain nodes: a pod on a node whose agent a test stops stays cut
// off until its agent is back (nothing re-points that node), as in a real cluster until
// the kubelet restarts it.
func (e *Env) CrossTraffic(t testing.TB, from, to string) (src Source, target string) {
	t.Helper()
	src = e.SourcePods(t, from)[0]
	target = net.JoinHostPort(e.PodOn(t, to, e.NodeOfKind(t, to, false), WhereamiImage).Status.PodIP, "8080")
	require.Eventually(t, Converge, from+" → "+to+" "+target, func() error {
		_, err := TryWhereami(src.NS, target)
		return err
	})
	return src, target
}

// CrossTrafficFamilies is CrossTraffic in every family the target pod has: its targets
// are the whereami pod's address of each, in the pod's order (IPv4 then IPv6 in a
// dual-stack lab), once the client reaches every one.
func (e *Env) CrossTrafficFamilies(t testing.TB, from, to string) (src Source, targets []string) {
	t.Helper()
	src = e.SourcePods(t, from)[0]
	for _, ip := range e.PodOn(t, to, e.NodeOfKind(t, to, false), WhereamiImage).Status.PodIPs {
		target := net.JoinHostPort(ip.IP, "8080")
		require.Eventually(t, Converge, from+" → "+to+" "+target, func() error {
			_, err := TryWhereami(src.NS, target)
			return err
		})
		targets = append(targets, target)
	}
	return src, targets
}

// Handover is one failover a test caused: the gateway whose agent it stopped, the one
// that took over, and what the watched GETs saw from the signal on: Outage of the target,
// Also of each other target watched beside it (another family's address), in order.
type Handover struct {
	Cluster, From, To string
	Outage            Outage
	Also              []Outage
	env               *Env
	// agent is the stopped agent's pod and restarts its container's count before.
	agent    corev1.Pod
	restarts int32
}

// StopActiveAgent stops the agent container on the cluster's active gateway with sig
// while src GETs target (CrossTraffic), and each of also beside it, and that node's
// kubelet is paused, waits until another gateway is active and a GET sent after the
// signal is answered by every target, and measures the outages from the signal. It
// resumes the kubelet before it returns; WaitBack waits for the stopped agent to run
// again.
func (e *Env) StopActiveAgent(t testing.TB, cluster string, sig syscall.Signal, src Source, target string, also ...string) Handover {
	t.Helper()
	h := Handover{Cluster: cluster, From: e.ActiveGateway(t, cluster).Name, env: e}
	h.agent = e.AgentPod(t, cluster, h.From)
	h.restarts = Restarts(h.agent, "agent")
	// Without its kubelet, the node does not restart the agent at once: a restarted agent
	// takes its own node's Lease back, and the other gateway would never be needed.
	resume := e.PauseKubelet(t, cluster, h.From)
	defer resume()
	devices := e.VXLANIndexes(t, cluster)
	p := StartProber(src.NS, target)
	others := make([]*Prober, len(also))
	for i, a := range also {
		others[i] = StartProber(src.NS, a)
	}
	time.Sleep(300 * time.Millisecond)
	e.SignalContainer(t, h.agent, "agent", sig)
	fault := time.Now()
	var taken topology.Node
	if _, err := require.Within(Converge, func() error {
		if taken = e.ActiveGateway(t, cluster); taken.Name == h.From {
			return fmt.Errorf("%s still active", h.From)
		}
		if !p.AnsweredAfter(fault) {
			return fmt.Errorf("no answer from %s since the %s", target, sig)
		}
		for i, o := range others {
			if !o.AnsweredAfter(fault) {
				return fmt.Errorf("no answer from %s since the %s", also[i], sig)
			}
		}
		return nil
	}); err != nil {
		e.LogAgents(t)
		t.Fatalf("%s: traffic after %s of %s's agent: %v; %s", cluster, sig, h.From, err, p.Since(fault))
	}
	// Half a second more: traffic that comes back and stops again is an outage too.
	time.Sleep(500 * time.Millisecond)
	h.To, h.Outage = taken.Name, p.Since(fault)
	for _, o := range others {
		h.Also = append(h.Also, o.Since(fault))
	}
	// Taking over converges the standby's vx-strait; it must not make it again (a pass
	// that saw the node's own Lease before its elector said so used to tear it down).
	if was, now := devices[taken.Name], e.VXLANIndexes(t, cluster)[taken.Name]; was != now {
		t.Errorf("%s's %s was made again while it took over (index %d, was %d)", taken.Name, route.VXLANDevice, now, was)
	}
	return h
}

// WaitBack waits until the kubelet has restarted the stopped agent and its pod is
// ready, a standby again.
func (h Handover) WaitBack(t testing.TB) {
	t.Helper()
	h.env.WaitRestarted(t, h.Cluster, h.agent, "agent", h.restarts, 2*time.Minute)
}

// FailOver is one StopActiveAgent, every target's outage bounded by FailoverBound, once
// the stopped agent is back.
func (e *Env) FailOver(t testing.TB, cluster string, sig syscall.Signal, src Source, target string, also ...string) Handover {
	t.Helper()
	h := e.StopActiveAgent(t, cluster, sig, src, target, also...)
	ok := true
	for i, to := range append([]string{target}, also...) {
		o := h.Outage
		if i > 0 {
			o = h.Also[i-1]
		}
		t.Logf("%s: %s's agent %s, %s took over; %s → %s: %s", cluster, h.From, sig, h.To, src.Name, to, o)
		ok = BoundOutage(t, fmt.Sprintf("%s: %s → %s after %s's agent was %s", cluster, src.Name, to, h.From, sig), o, FailoverBound(sig)) && ok
	}
	if !ok {
		e.LogAgents(t)
	}
	h.WaitBack(t)
	return h
}

// LogAgents logs the last lines of every member's agents, for a failing bound.
func (e *Env) LogAgents(t testing.TB) {
	t.Helper()
	for _, c := range e.Topo.Clusters {
		t.Logf("%s's agents, last lines:\n%s", c.Name, e.StraitLogs(t, c.Name, AgentApp, "agent", 30))
	}
}

// VXLANDevice is the vx-strait link in network namespace ns.
func VXLANDevice(ns string) (lk netlink.Link, err error) {
	err = netns.Do(ns, func() error {
		lk, err = netlink.LinkByName(route.VXLANDevice)
		return err
	})
	return lk, err
}

// VXLANIndexes are the interface indexes of vx-strait on the cluster's gateway nodes (0:
// none), to tell a device that was made again from one that was kept.
func (e *Env) VXLANIndexes(t testing.TB, cluster string) map[string]int {
	t.Helper()
	cl, ok := e.Topo.Cluster(cluster)
	if !ok {
		t.Fatalf("no cluster %s in the lab", cluster)
	}
	out := map[string]int{}
	for _, n := range cl.Nodes {
		if !n.Gateway {
			continue
		}
		if lk, err := VXLANDevice(n.Namespace); err == nil {
			out[n.Name] = lk.Attrs().Index
		}
	}
	return out
}
