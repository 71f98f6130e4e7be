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

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/gateway"
	"github.com/straitnet/strait/test/netns"
	"github.com/straitnet/strait/test/require"
)

// BenchmarkAgentFootprint runs the real `straitd agent` binary on a plain node (a
// namespace) of a member with 20 peers, waits until it converged, then measures its RSS
// and CPU over 10 idle seconds (periodic resync included).
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
	for i := range 20 {
		mustCreate(b, c, &straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: straitv1.SystemNamespace},
			Spec: straitv1.PeerSpec{ClusterID: fmt.Sprintf("p%d", i), CIDRs: []string{fmt.Sprintf("10.%d.0.0/16", 100+i)}}})
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
		require.Eventually(b, 30*time.Second, "the agent's 20 routes in table 4242", func() error {
			out, err := node.Command(ctx, "ip", "route", "show", "table", "4242").Output()
			if err != nil || strings.Count(string(out), "\n") != 20 {
				return fmt.Errorf("table 4242: %q: %w", out, err)
			}
			return nil
		})
		cpu0 := cpuTicks(b, pid)
		const idle = 10 * time.Second
		time.Sleep(idle)
		cpu1 := cpuTicks(b, pid)
		rss := rssKiB(b, pid)
		stop()
		b.ReportMetric(float64(rss)/1024, "MiB-RSS")
		// Clock ticks are 1/100 s on Linux.
		b.ReportMetric(float64(cpu1-cpu0)/100/idle.Seconds()*100, "%CPU-idle")
	}
	// The agent leaves its state in place on SIGTERM; the namespace goes with the test.
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
