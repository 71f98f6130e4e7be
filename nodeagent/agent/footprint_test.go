package agent

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/gateway"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/require"
)

// footprintPeers is the largest clusterset's peer count: 255 members, each with 254
// peers.
const footprintPeers = 254

// BenchmarkAgentFootprint runs the real `straitd agent` binary on a plain node (a
// namespace) of a member with 254 peers, waits until it converged, then measures its
// RSS and CPU over 10 idle seconds (periodic resync included), its peak RSS, and how
// long one peer's change takes from the API server's answer to the route in the node (a
// new CIDR for one Peer, seen through a netlink route subscription in the node's
// namespace). Every round starts a new agent; the rounds are logged as a table and each
// metric is the worst round's.
func BenchmarkAgentFootprint(b *testing.B) { agentFootprint(b, false) }

// BenchmarkAgentFootprintGateway is BenchmarkAgentFootprint on the member's only
// gateway-capable node, which takes the Lease and is the active gateway: the WireGuard
// cable (wireguard-go, embedded, as on kernels without WireGuard, these machines' and the
// lab's) to all 254 peers, a health check of each every 5 s and their Peer status. The
// agent runs wholly inside the node's namespace (wireguard-go needs that) with a private
// /run, and reaches the API server through a forwarder on the namespace's loopback.
func BenchmarkAgentFootprintGateway(b *testing.B) { agentFootprint(b, true) }

// footprintRound is what one round measured.
type footprintRound struct {
	converged       time.Duration
	rssKiB, peakKiB int64
	cpuPercent      float64
	peerChange      time.Duration
	routes          int
}

func agentFootprint(b *testing.B, gatewayNode bool) {
	require.Root(b)
	cfg, kubeconfig := startAPIServer(b)
	dir := b.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "straitd")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/straitd").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	// node is where the agent runs; other stands for the rest of the cluster's LAN and,
	// for the gateway, the WAN where the remote gateways' endpoints are (none answers).
	node, other := netns.New(b, "node"), netns.New(b, "lan")
	netns.Veth(b, node, "eth0", other, "eth0")
	node.AddAddr(b, "eth0", "10.0.1.3/16")

	ctx := context.Background()
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	mustCreate(b, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: straitv1.SystemNamespace}})
	self := "plain"
	nodes := []string{"gw", "plain"}
	if gatewayNode {
		self, nodes = "gw", []string{"plain", "gw"}
	}
	for i, name := range nodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if name == "gw" {
			n.Labels = map[string]string{"strait.io/gateway": "true"}
		}
		mustCreate(b, c, n)
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.1.%d", 2+i)}}
		if err := c.Status().Update(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	if !gatewayNode {
		// Another node holds the Lease; this one only routes to it.
		holder := "gw"
		mustCreate(b, c, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: gateway.LeaseName, Namespace: straitv1.SystemNamespace},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}})
	}
	mustCreate(b, c,
		&straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Name: straitv1.MembershipName, Namespace: straitv1.SystemNamespace},
			Spec: straitv1.MembershipSpec{ClusterSet: "strait-system/cs", ClusterID: "c1", PodCIDRs: []string{"10.10.0.0/16"},
				ServiceCIDRs: []string{"10.11.0.0/16"}, Cable: straitv1.MemberCable{Driver: straitv1.CableWireGuard, Port: 4500},
				GatewayNodeSelector: map[string]string{"strait.io/gateway": "true"}}})
	for i := range footprintPeers {
		key, err := wgtypes.GeneratePrivateKey()
		if err != nil {
			b.Fatal(err)
		}
		cidr := netip.MustParsePrefix(peerCIDR(i))
		mustCreate(b, c, &straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: straitv1.SystemNamespace},
			Spec: straitv1.PeerSpec{ClusterID: fmt.Sprintf("p%d", i), CIDRs: []string{cidr.String()},
				Endpoint: &straitv1.PeerEndpoint{Gateway: fmt.Sprintf("p%d-gw", i), IP: fmt.Sprintf("10.0.2.%d", 1+i), Port: 4500,
					Driver: straitv1.CableWireGuard, PublicKey: key.PublicKey().String(), HealthCheckIP: cidr.Addr().Next().String()}}})
	}
	argv := []string{bin, "agent", "--node-name", self, "--kubeconfig", kc,
		"--resync", "5s", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}
	// Every round starts from a clean node: the agent leaves its state in place on
	// SIGTERM, and a round on the last one's would converge at once.
	cleanup := []string{bin, "agent", "--cleanup"}
	if gatewayNode {
		// The kubeconfig's server, 127.0.0.1:<port>, answers inside the namespace too.
		server, err := url.Parse(cfg.Host)
		if err != nil {
			b.Fatal(err)
		}
		node.ForwardIn(b, server.Host, server.Host)
		inNode := []string{"ip", "netns", "exec", node.Name, "sh", "-c", `mount -t tmpfs strait-bench /run && exec "$0" "$@"`}
		argv, cleanup = append(inNode, argv...), append(inNode, cleanup...)
	} else {
		// The agent talks to the API server on the host's loopback and programs the node
		// namespace.
		argv, cleanup = append(argv, "--netns", node.Path()), append(cleanup, "--netns", node.Path())
	}
	// The gateway's cable routes (protocol 243) or the plain node's routes to the
	// gateway (protocol 242), one per peer, in table 4242.
	protocol := route.Protocol
	if gatewayNode {
		protocol = route.CableProtocol
	}

	var rounds []footprintRound
	for range b.N {
		if out, err := exec.Command(cleanup[0], cleanup[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", cleanup, err, out)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		var logs strings.Builder
		cmd.Stdout, cmd.Stderr = &logs, &logs
		started := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		pid := cmd.Process.Pid
		stopped := false
		stop := func() {
			if !stopped {
				stopped = true
				_ = cmd.Process.Signal(os.Interrupt)
				_ = cmd.Wait()
			}
		}
		b.Cleanup(func() {
			stop()
			if b.Failed() {
				b.Logf("agent output:\n%s", logs.String())
			}
		})
		var r footprintRound
		require.Eventually(b, 60*time.Second, fmt.Sprintf("the agent's %d routes of protocol %d in table %d", footprintPeers, protocol, route.Table), func() error {
			if r.routes = len(tableRoutes(b, node, protocol)); r.routes != footprintPeers {
				return fmt.Errorf("table %d holds %d routes of protocol %d", route.Table, r.routes, protocol)
			}
			return nil
		})
		r.converged = time.Since(started)
		if gatewayNode {
			require.Eventually(b, 10*time.Second, "the agent's Gateway says active", gatewayIs(c, self, straitv1.HAActive))
		}
		cpu0 := cpuTicks(b, pid)
		const idle = 10 * time.Second
		time.Sleep(idle)
		cpu1 := cpuTicks(b, pid)
		// Clock ticks are 1/100 s on Linux.
		r.cpuPercent = float64(cpu1-cpu0) / 100 / idle.Seconds() * 100
		r.rssKiB = procStatusKiB(b, pid, "VmRSS")
		r.peerChange = peerChange(b, c, node)
		r.peakKiB = procStatusKiB(b, pid, "VmHWM")
		stop()
		rounds = append(rounds, r)
	}
	// The namespace and what the last agent left in it go with the test.
	reportFootprint(b, rounds)
}

// reportFootprint logs every round and reports the worst one's figures.
func reportFootprint(b *testing.B, rounds []footprintRound) {
	var table strings.Builder
	fmt.Fprintf(&table, "%d rounds, %d peers:\nround  converged  RSS MiB  peak RSS MiB  CPU idle %%  peer change ms\n", len(rounds), footprintPeers)
	var worst footprintRound
	for i, r := range rounds {
		fmt.Fprintf(&table, "%5d  %8.1fs  %7.1f  %12.1f  %10.2f  %14.1f\n", i+1, r.converged.Seconds(),
			float64(r.rssKiB)/1024, float64(r.peakKiB)/1024, r.cpuPercent, float64(r.peerChange.Microseconds())/1000)
		worst.rssKiB = max(worst.rssKiB, r.rssKiB)
		worst.peakKiB = max(worst.peakKiB, r.peakKiB)
		worst.cpuPercent = max(worst.cpuPercent, r.cpuPercent)
		worst.peerChange = max(worst.peerChange, r.peerChange)
	}
	b.Log(table.String())
	b.ReportMetric(float64(worst.rssKiB)/1024, "MiB-RSS")
	b.ReportMetric(float64(worst.peakKiB)/1024, "MiB-peak-RSS")
	b.ReportMetric(worst.cpuPercent, "%CPU-idle")
	b.ReportMetric(float64(worst.peerChange.Microseconds())/1000, "ms-peer-change")
}

// peerCIDR is peer i's pod CIDR: a /24 in 172.16.0.0/12, away from the member's own.
func peerCIDR(i int) string { return fmt.Sprintf("172.%d.%d.0/24", 16+i/256, i%256) }

// tableRoutes lists the routes of protocol in the agent's table in the node.
func tableRoutes(b *testing.B, node *netns.NS, protocol int) []netlink.Route {
	routes, err := node.NL.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: route.Table, Protocol: netlink.RouteProtocol(protocol)},
		netlink.RT_FILTER_TABLE|netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		b.Fatal(err)
	}
	return routes
}

// peerChange gives one Peer, p7, a new CIDR and returns the time from the API server's
// answer to the route for it in the node, and then puts the old CIDR back.
func peerChange(b *testing.B, c client.Client, node *netns.NS) time.Duration {
	ctx := context.Background()
	updates, done := make(chan netlink.RouteUpdate, 1024), make(chan struct{})
	defer close(done)
	if err := netlink.RouteSubscribeWithOptions(updates, done, netlink.RouteSubscribeOptions{Namespace: &node.Handle}); err != nil {
		b.Fatal(err)
	}
	const moved = "172.31.255.0/24"
	setCIDR := func(cidr string) time.Time {
		p := &straitv1.Peer{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: "p7"}, p); err != nil {
			b.Fatal(err)
		}
		p.Spec.CIDRs = []string{cidr}
		if err := c.Update(ctx, p); err != nil {
			b.Fatal(err)
		}
		return time.Now()
	}
	start := setCIDR(moved)
	timeout := time.After(30 * time.Second)
	for {
		select {
		case u := <-updates:
			if u.Type == unix.RTM_NEWROUTE && u.Table == route.Table && u.Dst != nil && u.Dst.String() == moved {
				took := time.Since(start)
				setCIDR(peerCIDR(7))
				return took
			}
		case <-timeout:
			b.Fatalf("no route to %s in table %d 30 s after p7's change", moved, route.Table)
		}
	}
}

func cpuTicks(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// procStatusKiB reads a field in kB of /proc/<pid>/status: VmRSS, VmHWM (the peak RSS).
func procStatusKiB(b *testing.B, pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			v, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return v
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
