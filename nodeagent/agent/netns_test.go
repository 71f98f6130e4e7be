package agent

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/globalnet"
	"github.com/straitnet/strait/nodeagent/health"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/test/require"
	"golang.org/x/sys/unix"
)

const timeout = 2 * time.Second

// reach checks ICMP and TCP from a pod to a remote pod, and returns the source the
// server saw.
func reach(t *testing.T, from *labNode, to netip.Addr) string {
	t.Helper()
	if _, err := from.pod.Ping(to, timeout); err != nil {
		t.Fatalf("ping %s → %s: %v", from.name, to, err)
	}
	src, err := from.pod.WhoAmI(to.String()+":7000", timeout)
	if err != nil {
		t.Fatalf("tcp %s → %s: %v", from.name, to, err)
	}
	return src
}

// prober sends a ping every 10 ms from a pod and counts the ones without answer.
func prober(t *testing.T, from *labNode, to netip.Addr) (stop func() (sent, lost int64)) {
	var sentN, lostN atomic.Int64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			sentN.Add(1)
			if _, err := from.pod.Ping(to, 500*time.Millisecond); err != nil {
				lostN.Add(1)
			}
		}
	}()
	return func() (int64, int64) { close(done); <-finished; return sentN.Load(), lostN.Load() }
}

func TestDataplaneRoutedClusters(t *testing.T) {
	l := newLab(t, false)
	c1, c2 := l.clusters[0], l.clusters[1]
	for _, cl := range l.clusters {
		for _, n := range cl.nodes {
			n.pod.ServeEcho(t, "0.0.0.0:7000")
		}
	}
	l.converge()
	src, dst := c1.node("node"), c2.node("node")

	t.Run("plain node pod reaches remote plain node pod through vx-strait and the gateways", func(t *testing.T) {
		if got := reach(t, src, dst.podIP); got != src.podIP.String() {
			t.Fatalf("server saw %s, want the pod's own IP %s (no NAT without globalnet)", got, src.podIP)
		}
		reach(t, c1.node("gw2"), c2.node("gw1").podIP) // passive gateway's pod, to the active gateway's pod
	})

	t.Run("TCP MSS is clamped to the route MTU", func(t *testing.T) {
		var ln net.Listener
		if err := dst.pod.Do(func() error {
			var err error
			ln, err = net.Listen("tcp4", "0.0.0.0:7002")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		mss := make(chan int, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				mss <- -1
				return
			}
			defer c.Close()
			raw, _ := c.(*net.TCPConn).SyscallConn()
			v := -1
			_ = raw.Control(func(fd uintptr) { v, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG) })
			mss <- v
		}()
		c, err := src.pod.Dial(context.Background(), dst.podIP.String()+":7002")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// Both pods have MTU 1500 (MSS 1460); the route through vx-strait has 1450.
		if got := <-mss; got <= 0 || got > 1450-40 {
			t.Fatalf("server's MSS %d, want at most %d (clamped to the route MTU)", got, 1450-40)
		} else {
			t.Logf("server's MSS %d", got)
		}
	})

	t.Run("node state", func(t *testing.T) {
		d := l.dumps()
		for _, want := range []string{
			// The MACs are derived from the nodes' addresses: the gateway's is known
			// without ARP (a permanent neighbor entry).
			"link vx-strait vxlan vni=4242 port=4804 local=10.0.1.3 parent=eth0 mtu=1450 mac=0a:73:0a:00:01:03 up\n  addr 241.0.1.3/8\n" +
				"  fdb 10.0.1.1\n  neighbor 241.0.1.1 lladdr 0a:73:0a:00:01:01\n  rp_filter=2\n",
			"route table=4242 proto=242 10.20.0.0/16 via 241.0.1.1 dev vx-strait onlink mtu=1450\n",
			"route table=4242 proto=242 10.21.0.0/16 via 241.0.1.1 dev vx-strait onlink mtu=1450\n",
			"rule pref=4242 table=4242\n",
			"ip daddr @remote-cidrs tcp flags syn tcp option maxseg size set rt mtu",
			"chain keep-remote-source type=nat hook=postrouting priority=90\n    ip daddr @remote-cidrs snat to ip saddr\n    ip saddr @remote-cidrs snat to ip saddr\n",
		} {
			if !strings.Contains(d["c1-node"], want) {
				t.Errorf("c1-node lacks %q:\n%s", want, d["c1-node"])
			}
		}
		if want := "route table=4242 proto=242 10.20.0.0/16 via 203.0.113.21 dev wan onlink mtu=1500\n"; !strings.Contains(d["c1-gw1"], want) {
			t.Errorf("active gateway lacks %q:\n%s", want, d["c1-gw1"])
		}
		// An IPv4-only cluster's nodes look as they did before IPv6: no IPv6 VTEP, rule
		// or table ip6 strait.
		for name, dump := range d {
			for _, v6 := range []string{"fd53:", "rule ip6", "nft table ip6"} {
				if strings.Contains(dump, v6) {
					t.Errorf("%s of an IPv4-only cluster has %q:\n%s", name, v6, dump)
				}
			}
		}
		if !strings.Contains(d["c1-gw1"], "fdb 10.0.1.2\n  fdb 10.0.1.3\n") {
			t.Errorf("active gateway's vx-strait lacks FDB entries for the other nodes:\n%s", d["c1-gw1"])
		}
	})

	t.Run("restart converges without interrupting traffic or duplicating state", func(t *testing.T) {
		before := l.dumps()
		conn, err := src.pod.Dial(context.Background(), dst.podIP.String()+":7000")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		stop := prober(t, src, dst.podIP)
		time.Sleep(100 * time.Millisecond)
		// A new process: new kernel handles, new Dataplanes, nothing remembered.
		for _, cl := range l.clusters {
			for _, n := range cl.nodes {
				k, err := kernel.NewLinux(n.ns.Handle)
				if err != nil {
					t.Fatal(err)
				}
				l.t.Cleanup(k.Close)
				n.kernel, n.dp = k, NewDataplane(k)
			}
		}
		l.converge()
		l.converge()
		time.Sleep(100 * time.Millisecond)
		sent, lost := stop()
		if lost != 0 {
			t.Errorf("%d of %d pings lost across the restart", lost, sent)
		}
		if _, err := netns.Ask(conn, timeout); err != nil {
			t.Errorf("TCP connection broke across the restart: %v", err)
		}
		after := l.dumps()
		for name, d := range before {
			if after[name] != d {
				t.Errorf("%s changed across the restart:\nbefore:\n%s\nafter:\n%s", name, d, after[name])
			}
		}
	})

	t.Run("gateway failover re-points every node", func(t *testing.T) {
		stop := prober(t, src, dst.podIP)
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		c1.active, c2.active = c1.node("gw2").name, c2.node("gw2").name
		l.converge()
		converged := time.Since(start)
		stopped := false
		t.Cleanup(func() {
			if !stopped {
				stop()
			}
		})
		require.Eventually(t, timeout, "traffic after failover", func() error { _, err := src.pod.Ping(dst.podIP, 200*time.Millisecond); return err })
		gap := time.Since(start)
		sent, lost := stop()
		stopped = true
		t.Logf("failover: all 6 nodes converged in %v, traffic flowing after %v (%d of %d pings lost)", converged, gap, lost, sent)
		reach(t, src, dst.podIP)
		d := l.dumps()
		if strings.Contains(d["c1-gw1"], "dev wan") {
			t.Errorf("the old gateway still routes into the cable:\n%s", d["c1-gw1"])
		}
		if c1.node("gw1").routed().remotes() != nil {
			t.Error("the old gateway's cable was not cleaned up")
		}
		if !strings.Contains(d["c1-node"], "fdb 10.0.1.2\n") || strings.Contains(d["c1-node"], "fdb 10.0.1.1\n") {
			t.Errorf("plain node's vx-strait does not point at the new gateway only:\n%s", d["c1-node"])
		}
	})

	t.Run("removing the peer removes its routes", func(t *testing.T) {
		c1.peers = nil
		l.converge()
		for _, n := range c1.nodes {
			if d := l.dumps()[n.name]; d != "" {
				t.Errorf("%s still has state for the removed peer:\n%s", n.name, d)
			}
		}
		if _, err := src.pod.Ping(dst.podIP, 300*time.Millisecond); err == nil {
			t.Error("remote pod still reachable after its peer was removed")
		}
	})

	t.Run("cleanup leaves nothing", func(t *testing.T) {
		// A route a cable driver left behind (its own protocol) goes too.
		gw := c2.activeNode()
		gw.ns.Run(t, "ip", "route", "add", "10.99.0.0/16", "dev", "wan", "table", "4242", "proto", "243")
		for _, cl := range l.clusters {
			for _, n := range cl.nodes {
				if err := n.dp.Cleanup(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		for name, d := range l.dumps() {
			if d != "" {
				t.Errorf("%s after cleanup:\n%s", name, d)
			}
		}
		if out := gw.ns.Run(t, "ip", "route", "show", "table", "4242"); out != "" {
			t.Errorf("table 4242 after cleanup: %s", out)
		}
		if out := gw.ns.Run(t, "ip", "rule", "show"); strings.Contains(out, "4242") || !strings.Contains(out, "lookup local") {
			t.Errorf("rules after cleanup: %s", out)
		}
	})
}

// exportEcho serves an echo on the plain node's pod of cl (port 7000) and exports it
// under globalnet as demo/echo at 242.2.0.10, port 80; it returns that node.
func exportEcho(t *testing.T, cl *labCluster) *labNode {
	server := cl.node("node")
	server.pod.ServeEcho(t, "0.0.0.0:7000")
	cl.ingresses = []straitv1.GlobalIngress{{Spec: straitv1.GlobalIngressSpec{ServiceName: "echo", ServiceNamespace: "demo",
		GlobalIP: "242.2.0.10", ServiceIP: "10.96.0.10"}}}
	cl.endpoints["demo/echo"] = []netip.Addr{server.podIP}
	// The service listens on 80, its pods on 7000.
	cl.ports["demo/echo"] = []globalnet.Port{{Port: 80, Target: 7000}}
	return server
}

func TestDataplaneGlobalnet(t *testing.T) {
	l := newLab(t, true)
	g1, g2 := l.clusters[0], l.clusters[1]
	server := exportEcho(t, g2)
	l.converge()
	client := g1.node("node")
	if client.podIP != server.podIP {
		t.Fatalf("test setup: both clusters should use the same pod IPs, got %s and %s", client.podIP, server.podIP)
	}
	global := netip.MustParseAddr("242.2.0.10")

	t.Run("pod reaches a global IP in the other cluster from an egress IP", func(t *testing.T) {
		got, err := client.pod.WhoAmI(global.String()+":80", timeout)
		if err != nil {
			t.Fatalf("tcp %s → %s:80: %v", client.name, global, err)
		}
		if got != "242.1.0.1" && got != "242.1.0.2" {
			t.Fatalf("server saw %s, want one of g1's egress IPs 242.1.0.1, 242.1.0.2", got)
		}
		// The other direction: g2's pod reaches nothing in g1 until g1 exports a service.
		if _, err := server.pod.Ping(netip.MustParseAddr("242.1.0.10"), 300*time.Millisecond); err == nil {
			t.Error("an unallocated global IP answered")
		}
	})

	t.Run("health check IPs answer through the tunnel", func(t *testing.T) {
		gw := g1.activeNode()
		p := health.NewICMP(gw.ns.Handle, 3, 20*time.Millisecond, 500*time.Millisecond)
		r, err := p.Probe(context.Background(), netip.MustParseAddr("242.1.255.255"), netip.MustParseAddr("242.2.255.255"))
		if err != nil || r.Received != 3 {
			t.Fatalf("probe g1 → g2 health-check IP: %+v, %v", r, err)
		}
	})

	t.Run("restart leaves NAT state unchanged", func(t *testing.T) {
		before := l.dumps()
		for _, cl := range l.clusters {
			for _, n := range cl.nodes {
				n.dp = NewDataplane(n.kernel)
			}
		}
		l.converge()
		for name, d := range l.dumps() {
			if before[name] != d {
				t.Errorf("%s changed:\n%s\nwas:\n%s", name, d, before[name])
			}
		}
		if !strings.Contains(before["c1-gw1"], "map gn-egress integer : ipv4_addr\n    0 : 242.1.0.1\n    1 : 242.1.0.2\n") {
			t.Errorf("g1's gateway lacks its egress map:\n%s", before["c1-gw1"])
		}
	})

	t.Run("removing the peer removes its NAT and routes", func(t *testing.T) {
		g1.peers = nil
		l.converge()
		for _, n := range g1.nodes {
			if d := l.dumps()[n.name]; d != "" {
				t.Errorf("%s:\n%s", n.name, d)
			}
		}
		if _, err := client.pod.WhoAmI(global.String()+":7000", 300*time.Millisecond); err == nil {
			t.Error("global IP still reachable after the peer was removed")
		}
	})

	t.Run("cleanup leaves nothing", func(t *testing.T) {
		for _, cl := range l.clusters {
			for _, n := range cl.nodes {
				if err := n.dp.Cleanup(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		for name, d := range l.dumps() {
			if d != "" {
				t.Errorf("%s after cleanup:\n%s", name, d)
			}
		}
	})
}
