package labtest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/nodeagent/gateway"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/require"
)

// Failover bounds, from the signal to the agent. CrashFailoverBound bounds the outage:
// until the watched GETs are answered again and at every later moment of the watch
// (issue 24), for a crash and a graceful stop alike. A crash costs 1.1-1.2 s on an idle
// machine (the 1 s Lease runs out, then the new gateway converges) and 0.5-2.5 s on CI's
// loaded two-core machines (2026-12-02); a graceful stop 0.1-0.4 s idle and 0.6-1.8 s
// there, the convergence after the takeover being the part that stretches with the load.
// GracefulTakeoverBound bounds what sets a graceful stop apart, on no machine's speed:
// the standby starts taking the released Lease (its AcquireTime) within it of the
// SIGTERM, where a missed release leaves it waiting for the 1 s Lease to run out. The
// outage bound stays far under Submariner's 15 s Lease, so a longer Lease or a
// convergence that stalls breaks it; StopActiveAgent fails a handover that remakes the
// data plane.
const (
	CrashFailoverBound    = 3 * time.Second
	GracefulTakeoverBound = 500 * time.Millisecond
)

// CrashBound is CrashFailoverBound for the lab's gateway Lease: as much longer as the
// lab's Lease and retry period (topology.Spec.GatewayLease) are than the agents'
// defaults (1 s, 250 ms), since a crashed gateway is replaced only once its Lease has run
// out, counted from a renewal up to a retry period before the crash. The stall-prone
// timing (2 s, 500 ms) gets 4.25 s: its crashes were seen at 2.3-3.97 s on the shapes lab.
func (e *Env) CrashBound() time.Duration {
	l := e.upOpts.Spec.GatewayLease
	if l == nil {
		return CrashFailoverBound
	}
	def := gateway.FastTiming()
	return CrashFailoverBound + max(l.Duration.Duration-def.LeaseDuration, 0) + max(l.RetryPeriod.Duration-def.RetryPeriod, 0)
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

// CrossTrafficFamilies is CrossTraffic in every family the target cluster has: its
// targets are the whereami pod's address of each, in the pod's order (IPv4 then IPv6 in
// a dual-stack lab), once the client reaches every one. A pod without an address in one
// of its cluster's pod ranges fails t: a family lost is not a family left out.
func (e *Env) CrossTrafficFamilies(t testing.TB, from, to string) (src Source, targets []string) {
	t.Helper()
	src = e.SourcePods(t, from)[0]
	c, ok := e.Topo.Cluster(to)
	if !ok {
		t.Fatalf("no cluster %s in the lab", to)
	}
	pod := e.PodOn(t, to, e.NodeOfKind(t, to, false), WhereamiImage)
	if err := podInEveryFamily(pod.Status.PodIPs, c.PodCIDR, c.PodCIDR6); err != nil {
		t.Fatalf("%s's pod %s: %v", to, pod.Name, err)
	}
	for _, ip := range pod.Status.PodIPs {
		target := net.JoinHostPort(ip.IP, "8080")
		require.Eventually(t, Converge, from+" → "+to+" "+target, func() error {
			_, err := TryWhereami(src.NS, target)
			return err
		})
		targets = append(targets, target)
	}
	return src, targets
}

// podInEveryFamily says what is wrong with a pod's addresses unless it has exactly one
// in each valid range of ranges (its cluster's pod CIDRs, an IPv6 one in a dual-stack
// lab), in that order.
func podInEveryFamily(ips []corev1.PodIP, ranges ...netip.Prefix) error {
	var want []netip.Prefix
	for _, r := range ranges {
		if r.IsValid() {
			want = append(want, r)
		}
	}
	if len(ips) != len(want) {
		return fmt.Errorf("addresses %v, want one in each of %v", ips, want)
	}
	for i, r := range want {
		a, err := netip.ParseAddr(ips[i].IP)
		if err != nil || !r.Contains(a) {
			return fmt.Errorf("address %d is %q, want one in %s (all: %v)", i, ips[i].IP, r, ips)
		}
	}
	return nil
}

// Handover is one failover a test caused: the gateway whose agent it stopped, the one
// that took over, and what the watched GETs saw from the signal on: Outage of the target,
// Also of each other target watched beside it (another family's address), in order.
type Handover struct {
	Cluster, From, To string
	Outage            Outage
	Also              []Outage
	// Taken is how long after the signal the new gateway's agent began to take the
	// Lease: its AcquireTime, written by the agent on the lab's one clock.
	Taken time.Duration
	env   *Env
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
	h.Taken = e.takenAfter(t, cluster, taken.Name, fault)
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

// takenAfter is how long after fault holder began to take the cluster's gateway Lease,
// by the Lease's AcquireTime; it fails t if holder does not hold the Lease.
func (e *Env) takenAfter(t testing.TB, cluster, holder string, fault time.Time) time.Duration {
	t.Helper()
	l, err := e.HostClient(t, cluster).CoordinationV1().Leases(straitv1.SystemNamespace).Get(context.Background(), gateway.LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: the gateway Lease: %v", cluster, err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != holder || l.Spec.AcquireTime == nil {
		t.Fatalf("%s: the gateway Lease names %v (acquired %v), want %s", cluster, l.Spec.HolderIdentity, l.Spec.AcquireTime, holder)
	}
	return max(l.Spec.AcquireTime.Sub(fault), 0)
}

// WaitBack waits until the kubelet has restarted the stopped agent and its pod is
// ready, a standby again.
func (h Handover) WaitBack(t testing.TB) {
	t.Helper()
	h.env.WaitRestarted(t, h.Cluster, h.agent, "agent", h.restarts, 2*time.Minute)
}

// FailOver is one StopActiveAgent, every target's outage bounded by CrashBound and a
// SIGTERM's takeover by GracefulTakeoverBound, once the stopped agent is back.
func (e *Env) FailOver(t testing.TB, cluster string, sig syscall.Signal, src Source, target string, also ...string) Handover {
	t.Helper()
	h := e.StopActiveAgent(t, cluster, sig, src, target, also...)
	ok := true
	for i, to := range append([]string{target}, also...) {
		o := h.Outage
		if i > 0 {
			o = h.Also[i-1]
		}
		t.Logf("%s: %s's agent %s, %s took over %s after; %s → %s: %s", cluster, h.From, sig, h.To, h.Taken.Round(time.Millisecond), src.Name, to, o)
		ok = BoundOutage(t, fmt.Sprintf("%s: %s → %s after %s's agent was %s", cluster, src.Name, to, h.From, sig), o, e.CrashBound()) && ok
	}
	ok = h.CheckTakeover(t, sig) && ok
	if !ok {
		e.LogAgents(t)
	}
	h.WaitBack(t)
	return h
}

// CheckTakeover fails t, and says false, when the agent was stopped with a SIGTERM and
// the new gateway took the Lease later than GracefulTakeoverBound after it.
func (h Handover) CheckTakeover(t testing.TB, sig syscall.Signal) bool {
	t.Helper()
	if sig != syscall.SIGTERM || h.Taken <= GracefulTakeoverBound {
		return true
	}
	t.Errorf("%s: %s took the gateway Lease %s after %s's agent was %s, want within %s: a released Lease is taken at once, one not released only once its term runs out",
		h.Cluster, h.To, h.Taken.Round(time.Millisecond), h.From, sig, GracefulTakeoverBound)
	return false
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
