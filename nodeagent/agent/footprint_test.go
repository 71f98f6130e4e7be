package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/gateway"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/netns"
	"github.com/straitnet/strait/test/require"
)

// footprintPeers is the largest clusterset's peer count: 255 members, each with 254
// peers.
const footprintPeers = 254

// BenchmarkAgentFootprint runs the real `straitd agent` binary on a plain node (a
// namespace) of a member with 254 peers, waits until it converged, then measures its
// RSS and CPU over 10 idle seconds (periodic resync included), and how long one peer's
// change takes from the API server's answer to the route in the node (a new CIDR for
// one Peer, seen through a netlink route subscription in the node's namespace).
func BenchmarkAgentFootprint(b *testing.B) {
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
	node, other := netns.New(b, "node"), netns.New(b, "gw")
	netns.Veth(b, node, "eth0", other, "eth0")
	node.AddAddr(b, "eth0", "10.0.1.3/24")

	ctx := context.Background()
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	mustCreate(b, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: straitv1.SystemNamespace}})
	for i, name := range []string{"gw", "plain"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		mustCreate(b, c, n)
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.1.%d", 2+i)}}
		if err := c.Status().Update(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	holder := "gw"
	mustCreate(b, c,
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: gateway.LeaseName, Namespace: straitv1.SystemNamespace},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
		&straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Name: straitv1.MembershipName, Namespace: straitv1.SystemNamespace},
			Spec: straitv1.MembershipSpec{ClusterSet: "strait-system/cs", ClusterID: "c1", PodCIDRs: []string{"10.10.0.0/16"},
				ServiceCIDRs: []string{"10.11.0.0/16"}, Cable: straitv1.MemberCable{Driver: straitv1.CableWireGuard, Port: 4500},
				GatewayNodeSelector: map[string]string{"strait.io/gateway": "true"}}})
	for i := range footprintPeers {
		mustCreate(b, c, &straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: straitv1.SystemNamespace},
			Spec: straitv1.PeerSpec{ClusterID: fmt.Sprintf("p%d", i), CIDRs: []string{peerCIDR(i)}}})
	}

	for range b.N {
		// The agent talks to the API server on the host's loopback and programs the node
		// namespace.
		cmd := exec.Command(bin, "agent", "--node-name", "plain", "--kubeconfig", kc, "--netns", node.Path(),
			"--resync", "5s", "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
		var logs strings.Builder
		cmd.Stdout, cmd.Stderr = &logs, &logs
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
		require.Eventually(b, 30*time.Second, fmt.Sprintf("the agent's %d routes in table %d", footprintPeers, route.Table), func() error {
			if n := len(tableRoutes(b, node)); n != footprintPeers {
				return fmt.Errorf("table %d holds %d routes", route.Table, n)
			}
			return nil
		})
		cpu0 := cpuTicks(b, pid)
		const idle = 10 * time.Second
		time.Sleep(idle)
		cpu1 := cpuTicks(b, pid)
		rss := rssKiB(b, pid)
		change := peerChange(b, c, node)
		stop()
		b.ReportMetric(float64(rss)/1024, "MiB-RSS")
		// Clock ticks are 1/100 s on Linux.
		b.ReportMetric(float64(cpu1-cpu0)/100/idle.Seconds()*100, "%CPU-idle")
		b.ReportMetric(float64(change.Microseconds())/1000, "ms-peer-change")
	}
	// The agent leaves its state in place on SIGTERM; the namespace goes with the test.
}

// peerCIDR is peer i's pod CIDR: a /24 in 172.16.0.0/12, away from the member's own.
func peerCIDR(i int) string { return fmt.Sprintf("172.%d.%d.0/24", 16+i/256, i%256) }

// tableRoutes lists the routes of the agent's table in the node.
func tableRoutes(b *testing.B, node *netns.NS) []netlink.Route {
	routes, err := node.NL.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: route.Table}, netlink.RT_FILTER_TABLE)
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

func rssKiB(b *testing.B, pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			v, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return v
		}
	}
	return 0
}
