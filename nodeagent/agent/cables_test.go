package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/ipsec"
	"github.com/straitnet/strait/nodeagent/cable/wireguard"
	"github.com/straitnet/strait/test/require"
)

// labCable is what the cable test needs to know about a driver.
type labCable struct {
	driver straitv1.CableDriver
	// device the gateway routes remote CIDRs into.
	device string
	// ownDevice: the driver makes device and removes it on cleanup (ipsec0 is charon's).
	ownDevice bool
	// roams: a peer follows the remote cluster's new gateway before it is told.
	roams bool
	// connect bounds how long a new cable may take to carry the first packet.
	connect time.Duration
}

// TestDataplaneCables runs the two-cluster lab with each real cable driver between the
// gateways: a pod on a plain node reaches a pod on the remote plain node (ICMP and TCP,
// both ways) through vx-strait, the gateway, the cable, the remote gateway and its
// vx-strait; the active gateways report the cable connected; after the active gateway of
// each cluster changes, traffic resumes through the new ones — for wireguard, in the
// cluster that has not yet heard of the remote's failover too (the peer roams) — and the
// old gateways keep no cable; cleanup leaves no route, device, file or process.
func TestDataplaneCables(t *testing.T) {
	for _, c := range []labCable{
		{driver: straitv1.CableVXLAN, device: "strait-vx0", ownDevice: true, connect: 5 * time.Second},
		{driver: straitv1.CableWireGuard, device: wireguard.DeviceName, ownDevice: true, roams: true, connect: 10 * time.Second},
		{driver: straitv1.CableIPsec, device: ipsec.LibipsecDevice, connect: 20 * time.Second},
	} {
		t.Run(string(c.driver), func(t *testing.T) { testCable(t, c) })
	}
}

func testCable(t *testing.T, c labCable) {
	l := newLabWithCable(t, false, c.driver)
	c1, c2 := l.clusters[0], l.clusters[1]
	src, dst := c1.node("node"), c2.node("node")
	src.pod.ServeEcho(t, "0.0.0.0:7000")
	dst.pod.ServeEcho(t, "0.0.0.0:7000")
	start := time.Now()
	l.converge()
	l.awaitTraffic(src, dst, c.connect)
	t.Logf("%s: first packet through %v after the first converge", c.driver, since(start))
	l.requireBothWays(src, dst)
	for _, cl := range l.clusters {
		gw := cl.activeNode()
		if out := gw.ns.Run(t, "ip", "route", "show", "table", "4242"); !strings.Contains(out, "dev "+c.device+" proto 243") {
			t.Fatalf("%s: no cable routes through %s:\n%s", gw.name, c.device, out)
		}
		l.requireConnected(gw, cl.peers[0].id, c.connect)
	}

	// c2's active gateway changes. As in a real failover c2's nodes converge first (they
	// watch their own Lease) and c1 is told later (through the hub's Peer). With a roaming
	// cable traffic resumes before that: c2's new gateway has the same key, and c1's
	// peer follows it.
	start = time.Now()
	c2.active = c2.node("gw2").name
	l.converge(c2)
	if c.roams {
		l.awaitTraffic(src, dst, c.connect, c2)
		t.Logf("%s: %s failed over; traffic resumed %v later, before %s was told", c.driver, c2.id, since(start), c1.id)
	}
	l.converge()
	l.awaitTraffic(src, dst, c.connect)
	t.Logf("%s: %s failed over; traffic resumed %v later", c.driver, c2.id, since(start))
	l.requireBothWays(src, dst)

	start = time.Now()
	c1.active = c1.node("gw2").name
	l.converge(c1)
	l.converge()
	l.awaitTraffic(src, dst, c.connect)
	t.Logf("%s: %s failed over; traffic resumed %v later", c.driver, c1.id, since(start))
	l.requireBothWays(src, dst)
	for _, cl := range l.clusters {
		l.requireConnected(cl.activeNode(), cl.peers[0].id, c.connect)
		old := cl.node("gw1")
		if out := old.ns.Run(t, "ip", "route", "show", "table", "4242"); strings.Contains(out, "proto 243") {
			t.Errorf("%s, no longer the gateway, kept cable routes:\n%s", old.name, out)
		}
		if out := old.ns.Run(t, "ip", "-o", "link", "show"); c.ownDevice && strings.Contains(out, c.device) {
			t.Errorf("%s, no longer the gateway, kept %s:\n%s", old.name, c.device, out)
		}
		if conns, err := old.driver.Connections(context.Background()); err != nil || len(conns) > 0 {
			t.Errorf("%s, no longer the gateway, has cable connections %+v (%v)", old.name, conns, err)
		}
	}

	for _, cl := range l.clusters {
		for _, n := range cl.nodes {
			if err := n.dp.Cleanup(context.Background(), n.driver); err != nil {
				t.Errorf("%s: cleanup: %v", n.name, err)
			}
			if out := n.ns.Run(t, "ip", "route", "show", "table", "all"); strings.Contains(out, "table 4242") {
				t.Errorf("%s: routes in table 4242 after cleanup:\n%s", n.name, out)
			}
			if out := n.ns.Run(t, "ip", "-o", "link", "show"); strings.Contains(out, "vx-strait") ||
				(c.ownDevice && strings.Contains(out, c.device)) {
				t.Errorf("%s: devices after cleanup:\n%s", n.name, out)
			}
			if n.driver == nil {
				continue
			}
			if !c.ownDevice { // ipsec0 stays with charon, without the driver's addresses
				if out := n.ns.Run(t, "ip", "-4", "-o", "addr", "show", "dev", c.device); out != "" {
					t.Errorf("%s: addresses left on %s after cleanup:\n%s", n.name, c.device, out)
				}
			}
			if conns, err := n.driver.Connections(context.Background()); err != nil || len(conns) > 0 {
				t.Errorf("%s: cable connections after cleanup: %+v (%v)", n.name, conns, err)
			}
			if n.stop != nil {
				n.stop()
			}
			if pids := netns.Pids(n.ns.Name); len(pids) > 0 {
				t.Errorf("%s: processes left: %v", n.name, pids)
			}
		}
	}
	if _, err := src.pod.Ping(dst.podIP, 300*time.Millisecond); err == nil {
		t.Error("remote pod still reachable after cleanup")
	}
}

// resyncEvery stands for the agents' periodic full resync while a test waits for traffic.
const resyncEvery = 2 * time.Second

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

// awaitTraffic waits until from's pod gets answers from to's pod, converging the nodes
// of every cluster (or the ones given) again every resyncEvery as the agents' resync
// would (an IKE initiation the other end was not ready for is retried that way). It
// fails the test after timeout.
func (l *lab) awaitTraffic(from, to *labNode, timeout time.Duration, only ...*labCluster) {
	l.t.Helper()
	last := time.Now()
	require.Eventually(l.t, timeout, from.name+" → "+to.name+": traffic", func() error {
		_, err := from.pod.Ping(to.podIP, 200*time.Millisecond)
		if err != nil && time.Since(last) > resyncEvery {
			l.converge(only...)
			last = time.Now()
		}
		return err
	})
}

// requireBothWays checks ICMP and TCP between the two pods, both ways, and that neither
// server sees a translated source.
func (l *lab) requireBothWays(a, b *labNode) {
	l.t.Helper()
	for _, p := range [][2]*labNode{{a, b}, {b, a}} {
		if got := reach(l.t, p[0], p[1].podIP); got != p[0].podIP.String() {
			l.t.Fatalf("%s's server saw %s, want %s's pod IP %s", p[1].name, got, p[0].name, p[0].podIP)
		}
	}
}

// requireConnected waits until gw's cable reports exactly one connection, to cluster,
// as up: what the agent publishes in the Peer's status.
func (l *lab) requireConnected(gw *labNode, cluster string, timeout time.Duration) {
	l.t.Helper()
	require.Eventually(l.t, timeout, gw.name+": connected to "+cluster, func() error {
		conns, err := gw.driver.Connections(context.Background())
		if err != nil {
			return err
		}
		got := []cable.Connection{}
		for _, c := range conns {
			got = append(got, cable.Connection{ClusterID: c.ClusterID, Connected: c.Connected})
		}
		if want := []cable.Connection{{ClusterID: cluster, Connected: true}}; !slices.Equal(got, want) {
			return fmt.Errorf("connections %+v, want %+v", conns, want)
		}
		return nil
	})
}
