package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// diagnoseChecks are strait diagnose's checks, each a line per member.
var diagnoseChecks = []string{"k8s-version", "kube-proxy", "cni", "mtu", "firewall", "connections", "deployment", "dns", "cidrs"}

// TestDiagnoseFindsEachFault: the built strait diagnose, with a kubeconfig file per
// member (the admin's, as a person's own credentials), passes every check on the healthy
// lab, then fails the check that names each fault put in on purpose, one at a time and
// put right before the next: a pod CIDR in the ClusterSet file that is not the
// cluster's, a CoreDNS Corefile without strait dns's block, a masquerading CNI (kindnet's
// rule) on a node whose masquerade bypass is removed, the cable port blocked at a
// gateway, and an agent stopped on a node.
func TestDiagnoseFindsEachFault(t *testing.T) {
	env.Require(t)
	args := []string{}
	for _, c := range members() {
		args = append(args, "--member-kubeconfig", c+"="+env.Lab.State().KubeconfigPath(c))
	}
	diagnose := func(t *testing.T, wantCode int, checks ...string) string {
		t.Helper()
		start := time.Now()
		out, errOut, code := exitCode(t, env.Strait, append(append([]string{"diagnose"}, checks...), args...)...)
		t.Logf("strait diagnose %s: exit %d in %s\n%s%s", strings.Join(checks, " "), code, time.Since(start).Round(100*time.Millisecond), out, errOut)
		if code != wantCode {
			t.Errorf("strait diagnose %s: exit %d, want %d", strings.Join(checks, " "), code, wantCode)
		}
		return out
	}
	// verdict is the RESULT of a check's line for a cluster, and its DETAIL.
	verdict := func(out, check, cluster string) (string, string) {
		f := fields(out, check, cluster)
		if len(f) < 3 {
			return "", ""
		}
		return f[2], strings.Join(f[3:], " ")
	}
	want := func(t *testing.T, out, check, cluster, status string, detail ...string) {
		t.Helper()
		got, d := verdict(out, check, cluster)
		if got != status {
			t.Errorf("%s %s: %q, want %s", check, cluster, got, status)
		}
		for _, s := range detail {
			if !strings.Contains(d, s) {
				t.Errorf("%s %s: the detail %q does not name %q", check, cluster, d, s)
			}
		}
	}

	t.Run("healthy", func(t *testing.T) {
		// Right after the lab is up, an active gateway may not have written its Peer's
		// status yet; diagnose rightly fails the connection until it has.
		waitConnected(t, time.Minute)
		out := diagnose(t, 0, "all")
		for _, check := range diagnoseChecks {
			for _, c := range members() {
				want(t, out, check, c, "pass")
			}
		}
		if strings.Contains(out, "WHAT TO DO") {
			t.Error("a healthy lab got something to do")
		}
		// On a lab whose ClusterSet carries IPv6 (a dual-stack lab), the per-family
		// checks name both families; on an IPv4 one, neither.
		dual := ipv6Carried(env.ClusterSet(t))
		for _, check := range []string{"cni", "mtu"} {
			for _, c := range members() {
				_, d := verdict(out, check, c)
				if got := strings.Contains(d, "IPv6: ") && strings.Contains(d, "IPv4: "); got != dual {
					t.Errorf("%s %s: %q names both families: %v, want %v (the ClusterSet carries IPv6: %v)", check, c, d, got, dual, dual)
				}
			}
		}
		if _, d := verdict(out, "dns", "c1"); !strings.Contains(d, "AAAA") {
			t.Errorf("dns c1: %q says nothing of AAAA (an IPv4-only service's is NOERROR with no answer)", d)
		}
	})

	// strait verify on the healthy lab: pod → pod and pod → ClusterIP across with the
	// caller's IP kept, from a gateway and a plain node of each member, the sample
	// exports' names resolved to c2's addresses, and a failover of c2's active gateway
	// whose gap stays under verify's bound.
	t.Run("verify", func(t *testing.T) {
		before := env.ActiveGateway(t, "c2").Name
		out, errOut, code := exitCode(t, env.Strait, append([]string{"verify"}, args...)...)
		t.Logf("strait verify: exit %d\n%s%s", code, out, errOut)
		if code != 0 {
			t.Errorf("strait verify: exit %d, want 0", code)
		}
		for _, row := range [][]string{{"connectivity", "c1→c2"}, {"connectivity", "c2→c1"}, {"service-discovery", "c1"}, {"gateway-failover", "c1→c2"}} {
			want(t, out, row[0], row[1], "pass")
		}
		if got, d := verdict(out, "connectivity", "c1→c2"); got == "pass" && (!strings.Contains(d, "ClusterIP") || !strings.Contains(d, "caller's IP kept")) {
			t.Errorf("connectivity c1→c2: %q names no ClusterIP or no kept caller", d)
		}
		if _, d := verdict(out, "gateway-failover", "c1→c2"); !strings.Contains(d, "stopped c2's active gateway "+before) {
			t.Errorf("gateway-failover: %q does not name the gateway it stopped, %s", d, before)
		}
		waitConnected(t, time.Minute)
	})

	t.Run("wrong pod CIDR in the ClusterSet", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(env.Root, labClusterSet))
		if err != nil {
			t.Fatal(err)
		}
		wrong := labtest.ChangeClusterSet(t, data, func(cs *straitv1.ClusterSet) {
			for i := range cs.Spec.Clusters {
				if cs.Spec.Clusters[i].Name == "c2" {
					cs.Spec.Clusters[i].PodCIDRs = []string{"10.19.0.0/16"}
				}
			}
		})
		file := filepath.Join(t.TempDir(), "clusterset.yaml")
		if err := os.WriteFile(file, wrong, 0o644); err != nil {
			t.Fatal(err)
		}
		out := diagnose(t, 2, "cidrs", "-f", file)
		want(t, out, "cidrs", "c1", "pass")
		want(t, out, "cidrs", "c2", "fail", "10.19.0.0/16")
		if !strings.Contains(out, "correct spec.clusters[name=c2]") {
			t.Error("no fix naming spec.clusters[name=c2]")
		}
	})

	// Every strait dns pod of c1 stopped is also a fault of the alerts' matrix: c1's
	// Prometheus fires StraitDNSDown, diagnose given the hub's Prometheus names its
	// runbook, and it resolves once strait dns is back (one of two pods restarting
	// alerts nothing: TestStraitDNSRestart).
	t.Run("missing CoreDNS block", func(t *testing.T) {
		ctx := context.Background()
		kube := env.HostClient(t, "c1")
		alerts := env.WatchAlerts(t, "c1")
		alerts.Quiet(t, time.Minute, "StraitDNSDown")
		stopped := time.Now()
		scaleDNS(t, "c1", 0)
		// Stopping is the kubelet's and strait dns's own shutdown; the bound starts when
		// the last pod is gone (its scrape failed before that at the latest).
		gone := time.Since(stopped)
		restored := false
		defer func() {
			if !restored {
				restoreDNS(t, "c1")
			}
		}()
		cm, err := kube.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data[corefile.Key], err = corefile.Remove(cm.Data[corefile.Key])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kube.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		out := diagnose(t, 2, "dns")
		want(t, out, "dns", "c1", "fail", "no strait-dns block")
		want(t, out, "dns", "c2", "pass")
		alerts.Fired(t, "StraitDNSDown", nil, stopped, gone+labtest.AlertBound(0, time.Minute))
		diagnoseNamesTheRunbook(t, "c1", "StraitDNSDown")
		restoreDNS(t, "c1")
		restored = true
		// Back: the pods are Ready (and the Corefile has their block again); Prometheus
		// discovers them by its watch of pods.
		alerts.Resolved(t, "StraitDNSDown", nil, time.Now(), labtest.ResolveBound(labtest.DiscoveryDetect))
	})

	t.Run("masquerading CNI without the bypass", func(t *testing.T) {
		node := env.NodeOfKind(t, "c1", false)
		c1, _ := env.Topo.Cluster("c1")
		ns := nodeNamespace(t, "c1", node)
		// kindnet's masquerade as the lab's kindnet-masq shape puts it (nftables variant),
		// but ahead of the agent's bypass (SourceChainPriority, srcnat-10): the agent
		// puts its chain back on each pass, and a probe whose first packet met it there
		// was not masqueraded (a run of 2026-12-02 saw "pass" for c1). The first NAT
		// chain to bind a connection wins, so this one masquerades whatever the agent
		// does; the loop below keeps the chain away so that the node's facts lack it.
		script := fmt.Sprintf(`add table ip diag-masq
add chain ip diag-masq postrouting { type nat hook postrouting priority srcnat - 20; }
add rule ip diag-masq postrouting fib daddr type local return
add rule ip diag-masq postrouting ip daddr %s return
add rule ip diag-masq postrouting masquerade
`, c1.PodCIDR)
		if _, err := netns.Exec(context.Background(), ns, script, "nft", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		// The agent puts its chain back on its next pass (a Peer's status change is one):
		// keep it removed while diagnose runs.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A chain goes only when empty: flush and delete in one transaction.
			remove := fmt.Sprintf("flush chain ip %[1]s %[2]s\ndelete chain ip %[1]s %[2]s\n", route.NFTable, route.SourceChain)
			for {
				_, _ = netns.Exec(context.Background(), ns, remove, "nft", "-f", "-")
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
		defer func() {
			close(stop)
			wg.Wait()
			if _, err := netns.Exec(context.Background(), ns, "", "nft", "delete", "table", "ip", "diag-masq"); err != nil {
				t.Error(err)
			}
			waitBypass(t, ns)
		}()
		out := diagnose(t, 2, "cni")
		want(t, out, "cni", "c1", "fail", node)
		want(t, out, "cni", "c2", "pass")
		if !strings.Contains(out, "lacks the agent's masquerade bypass") {
			t.Error("the fix does not say the node lacks the bypass")
		}
	})

	t.Run("blocked cable port", func(t *testing.T) {
		gw := env.ActiveGateway(t, "c2")
		port := env.ClusterSet(t).Spec.Cable.Port
		if port == 0 {
			port = straitv1.DefaultWireGuardPort
		}
		script := fmt.Sprintf("add table ip diag-block\nadd chain ip diag-block input { type filter hook input priority filter; }\nadd rule ip diag-block input udp dport %d drop\n", port)
		if _, err := netns.Exec(context.Background(), gw.Namespace, script, "nft", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if _, err := netns.Exec(context.Background(), gw.Namespace, "", "nft", "delete", "table", "ip", "diag-block"); err != nil {
				t.Error(err)
			}
			waitConnected(t, 90*time.Second)
		}()
		require.Eventually(t, 30*time.Second, "the health checks through the blocked cable fail", func() error {
			for _, c := range members() {
				if state := peerState(t, c); state == "Connected" {
					return fmt.Errorf("%s's peer still Connected", c)
				}
			}
			return nil
		})
		out := diagnose(t, 2, "firewall")
		for _, c := range members() {
			want(t, out, "firewall", c, "fail", gw.Name)
		}
		// The rule itself, read from the gateway's nftables, in the cable's family.
		want(t, out, "firewall", "c2", "fail", fmt.Sprintf("IPv4: node %s drops UDP %d, the cable's port: table ip diag-block chain input", gw.Name, port))
		if !strings.Contains(out, fmt.Sprintf("open UDP port %d", port)) {
			t.Errorf("the fix does not say to open UDP port %d", port)
		}
	})

	// The underlay carries less than the cable's full-sized packets and says nothing: c2's
	// active gateway drops every cable packet over 1000 bytes (a 1420-byte datagram is
	// 1480 on the wire), while the small ones, the handshakes and the health checks,
	// cross.
	t.Run("MTU too large for the underlay", func(t *testing.T) {
		gw := env.ActiveGateway(t, "c2")
		port := env.ClusterSet(t).Spec.Cable.Port
		if port == 0 {
			port = straitv1.DefaultWireGuardPort
		}
		script := fmt.Sprintf("add table ip diag-mtu\nadd chain ip diag-mtu input { type filter hook input priority filter; }\nadd rule ip diag-mtu input udp dport %d meta length > 1000 drop\n", port)
		if _, err := netns.Exec(context.Background(), gw.Namespace, script, "nft", "-f", "-"); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if _, err := netns.Exec(context.Background(), gw.Namespace, "", "nft", "delete", "table", "ip", "diag-mtu"); err != nil {
				t.Error(err)
			}
		}()
		out := diagnose(t, 2, "mtu")
		want(t, out, "mtu", "c1", "fail", "vanish while small ones cross")
		if !strings.Contains(out, "a black hole") {
			t.Error("the fix does not say black hole")
		}
	})

	t.Run("stopped agent", func(t *testing.T) {
		node := env.NodeOfKind(t, "c2", false)
		c := env.Client(t, "c2")
		ds := &appsv1.DaemonSet{}
		key := types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: labtest.AgentApp}
		if err := c.Get(context.Background(), key, ds); err != nil {
			t.Fatal(err)
		}
		orig := ds.DeepCopy()
		// OnDelete first, so that the other nodes' agents are not rolled; the node then
		// loses its agent through the template's affinity alone.
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpNotIn, Values: []string{node}}},
			}}}}}
		if err := c.Update(context.Background(), ds); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := c.Get(context.Background(), key, ds); err != nil {
				t.Fatal(err)
			}
			ds.Spec.Template.Spec.Affinity = orig.Spec.Template.Spec.Affinity
			ds.Spec.UpdateStrategy = orig.Spec.UpdateStrategy
			if err := c.Update(context.Background(), ds); err != nil {
				t.Fatal(err)
			}
			env.AgentPod(t, "c2", node)
		}()
		require.Eventually(t, time.Minute, "no agent on "+node, func() error {
			if pods := env.StraitPods(t, "c2", labtest.AgentApp, node); len(pods) > 0 {
				return fmt.Errorf("%d agent pods on %s", len(pods), node)
			}
			return nil
		})
		out := diagnose(t, 2, "deployment")
		want(t, out, "deployment", "c2", "fail", "no agent running on node "+node)
		want(t, out, "deployment", "c1", "pass")
	})
}

// scaleDNS sets strait dns's replicas in a cluster and waits until that many pods run.
func scaleDNS(t *testing.T, cluster string, replicas int32) {
	t.Helper()
	c := env.Client(t, cluster)
	d := &appsv1.Deployment{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: labtest.DNSApp}, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = &replicas
	if err := c.Patch(context.Background(), d, patch); err != nil {
		t.Fatal(err)
	}
	require.Eventually(t, time.Minute, fmt.Sprintf("%d strait dns pods in %s", replicas, cluster), func() error {
		if n := int32(len(env.StraitPods(t, cluster, labtest.DNSApp, ""))); n != replicas {
			return fmt.Errorf("%d pods", n)
		}
		return nil
	})
}

// restoreDNS brings strait dns back to its two replicas and waits for its block in the
// Corefile.
func restoreDNS(t *testing.T, cluster string) {
	t.Helper()
	scaleDNS(t, cluster, 2)
	require.Eventually(t, time.Minute, "strait dns's block back in "+cluster+"'s Corefile", func() error {
		cm, err := env.HostClient(t, cluster).CoreV1().ConfigMaps("kube-system").Get(context.Background(), "coredns", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !strings.Contains(cm.Data[corefile.Key], corefile.BeginMarker) {
			return fmt.Errorf("no block")
		}
		return nil
	})
}

// waitBypass waits until the agent has put its masquerade bypass back on a node.
func waitBypass(t *testing.T, ns string) {
	t.Helper()
	require.Eventually(t, time.Minute, "the bypass back in "+ns, func() error {
		_, err := netns.Exec(context.Background(), ns, "", "nft", "list", "chain", "ip", route.NFTable, route.SourceChain)
		return err
	})
}

// peerState is the state of a cluster's Peer (the lab has two members: one Peer each).
func peerState(t *testing.T, cluster string) string {
	t.Helper()
	peers := &straitv1.PeerList{}
	if err := env.Client(t, cluster).List(context.Background(), peers, client.InNamespace(straitv1.SystemNamespace)); err != nil {
		t.Fatal(err)
	}
	if len(peers.Items) != 1 {
		return fmt.Sprintf("%d peers", len(peers.Items))
	}
	return peers.Items[0].Status.State
}

// waitConnected waits until both members' Peers are Connected again.
func waitConnected(t *testing.T, timeout time.Duration) {
	t.Helper()
	require.Eventually(t, timeout, "both peers Connected", func() error {
		for _, c := range members() {
			if s := peerState(t, c); s != "Connected" {
				return fmt.Errorf("%s: %s", c, s)
			}
		}
		return nil
	})
}

// nodeNamespace is the network namespace of a lab node.
func nodeNamespace(t *testing.T, cluster, node string) string {
	t.Helper()
	c, _ := env.Topo.Cluster(cluster)
	for _, n := range c.Nodes {
		if n.Name == node {
			return n.Namespace
		}
	}
	t.Fatalf("%s: no node %s", cluster, node)
	return ""
}

// hungBound is how long diagnose all and gather may take with a node hung: a minute, as
// issue 34 asks of diagnose all, against about 5 s, 25 s and a few seconds on the healthy
// lab.
const hungBound = time.Minute

// verifyHungBound is verify's: hungBound and its probe pods' --pod-start-timeout (30 s
// by default), which it waits out on a node that takes a pod up slowly before it dials
// across. On CI's machine kind (2026-12-02), its probe pods took 28-40 s to run with the
// lab's two cores saturated, and verify 74 s and 78 s with a node hung.
const verifyHungBound = hungBound + 30*time.Second

// TestDiagnoseNeverHangs: the active gateway node of c2 hangs (its kubelet and its agent
// stopped with SIGSTOP, as on a node whose disk or kernel froze: the API server still
// answers, but nothing it asks of the node does). strait diagnose all still ends within
// a minute with the failure code, a failed nodes line names the node and says to look at
// it with kubectl get node and at its kubelet, and every check prints its line for both
// members; strait gather ends within the same bound and strait verify within it and its
// probe pods' start timeout (verifyHungBound), verify failing on
// the node, gather writing the rest and naming the node's missing part. Thawed, the node
// is Ready again and both Peers Connected.
func TestDiagnoseNeverHangs(t *testing.T) {
	env.Require(t)
	waitConnected(t, time.Minute)
	var args []string
	for _, c := range members() {
		args = append(args, "--member-kubeconfig", c+"="+env.Lab.State().KubeconfigPath(c))
	}
	run := func(t *testing.T, what string, argv ...string) (string, string, int, time.Duration) {
		t.Helper()
		start := time.Now()
		// Standard error stamped line by line: where a slow run spent its time.
		out, errOut, stamped, code := labtest.RunStamped(t, 2*time.Minute, env.Strait, argv...)
		took := time.Since(start)
		t.Logf("strait %s: exit %d in %s\n%s%s", what, code, took.Round(100*time.Millisecond), out, stamped)
		if strings.Contains(errOut, "was never called") {
			t.Errorf("strait %s printed controller-runtime's stack trace for a logger never set", what)
		}
		return out, errOut, code, took
	}
	hubArg := []string{"--member-kubeconfig", topology.HubName + "=" + env.Lab.State().KubeconfigPath(topology.HubName)}
	// The healthy lab's own times, beside which the deadlines were chosen.
	_, _, _, healthy := run(t, "diagnose all (healthy)", append([]string{"diagnose", "all"}, args...)...)
	_, _, _, healthyGather := run(t, "gather (healthy)", append(append([]string{"gather", "--dir", t.TempDir()}, hubArg...), args...)...)

	gw := env.ActiveGateway(t, "c2")
	agent := env.AgentPod(t, "c2", gw.Name)
	agentPid, err := env.Lab.ContainerPid(context.Background(), &agent, "agent")
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the agent thawed, then the kubelet (so that it finds its
	// agent running), then the wait for the node and the Peers.
	t.Cleanup(func() {
		require.Eventually(t, 2*time.Minute, "c2's node "+gw.Name+" Ready again", func() error {
			n, err := env.HostClient(t, "c2").CoreV1().Nodes().Get(context.Background(), gw.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s := lab.NodeReady(n); s != "Ready" {
				return fmt.Errorf("%s", s)
			}
			return nil
		})
		env.AgentPod(t, "c2", gw.Name)
		waitConnected(t, 2*time.Minute)
	})
	env.PauseKubelet(t, "c2", gw.Name)
	if err := syscall.Kill(agentPid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP of %s's agent (pid %d): %v", gw.Name, agentPid, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(agentPid, syscall.SIGCONT) })
	hung := time.Now()
	t.Logf("c2's active gateway %s hung: its kubelet and its agent (pid %d) stopped", gw.Name, agentPid)
	// gather, diagnose all and verify one after the other, as a person on call runs
	// them, each within its bound. Side by side (until 2026-12-02) each ran three
	// commands' probe pods, execs and log reads on CI's two saturated cores, and took
	// 50-79 s where alone it takes 12-25 s healthy: the bound then measured the machine.
	t.Cleanup(func() { t.Logf("the three ran within %s of the hang", time.Since(hung).Round(time.Second)) })

	t.Run("gather", func(t *testing.T) {
		argv := append([]string{"gather", "--dir", t.TempDir()}, hubArg...)
		out, errOut, code, took := run(t, "gather, "+gw.Name+" hung", append(argv, args...)...)
		t.Logf("gather took %s with %s hung (%s healthy)", took.Round(100*time.Millisecond), gw.Name, healthyGather.Round(100*time.Millisecond))
		if took > hungBound {
			t.Errorf("gather took %s with a hung node, want at most %s", took, hungBound)
		}
		if code != 1 {
			t.Errorf("gather: exit %d, want 1 (something could not be gathered)", code)
		}
		files := untar(t, strings.TrimSpace(out))
		// Its kubelet silent past the grace period, the node is NotReady and is then not
		// asked at all: either names it.
		named := strings.Contains(files["errors.txt"], "node "+gw.Name+" did not answer") || strings.Contains(files["errors.txt"], "node "+gw.Name+" is not Ready")
		if !named || !strings.Contains(errOut, "dump/"+gw.Name+".txt") {
			t.Errorf("errors.txt and standard error do not name %s's missing part:\n%s", gw.Name, files["errors.txt"])
		}
		for _, want := range []string{"c1/dump/", "c2/objects/memberships.yaml", topology.HubName + "/objects/clustersets.yaml"} {
			found := false
			for name := range files {
				found = found || strings.Contains(name, want)
			}
			if !found {
				t.Errorf("no %s in the tarball: the rest must be gathered", want)
			}
		}
	})

	t.Run("diagnose all", func(t *testing.T) {
		out, _, code, took := run(t, "diagnose all, "+gw.Name+" hung", append([]string{"diagnose", "all"}, args...)...)
		t.Logf("diagnose all took %s with %s hung (%s healthy)", took.Round(100*time.Millisecond), gw.Name, healthy.Round(100*time.Millisecond))
		if took > hungBound {
			t.Errorf("diagnose all took %s with a hung node, want at most %s", took, hungBound)
		}
		if code != 2 {
			t.Errorf("diagnose all: exit %d, want 2 (a check failed)", code)
		}
		if f := fields(out, "nodes", "c2"); len(f) < 3 || f[2] != "fail" || !strings.Contains(strings.Join(f, " "), "node "+gw.Name) {
			t.Errorf("no failed nodes line for c2 naming %s: %q", gw.Name, f)
		}
		if !strings.Contains(out, "kubectl get node "+gw.Name) || !strings.Contains(out, "kubelet") {
			t.Errorf("what to do does not say kubectl get node %s and the kubelet", gw.Name)
		}
		for _, check := range diagnoseChecks {
			for _, c := range members() {
				if f := fields(out, check, c); len(f) < 3 {
					t.Errorf("no %s line for %s: the other checks must still run and print", check, c)
				}
			}
		}
	})

	t.Run("verify", func(t *testing.T) {
		out, _, code, took := run(t, "verify, "+gw.Name+" hung", append([]string{"verify"}, args...)...)
		t.Logf("verify took %s with %s hung", took.Round(100*time.Millisecond), gw.Name)
		if took > verifyHungBound {
			t.Errorf("verify took %s with a hung node, want at most %s", took, verifyHungBound)
		}
		if code != 2 {
			t.Errorf("verify: exit %d, want 2 (a failure)", code)
		}
		if f := fields(out, "nodes", "c2"); len(f) < 3 || f[2] != "fail" || !strings.Contains(strings.Join(f, " "), "node "+gw.Name) {
			t.Errorf("no failed nodes line for c2 naming %s: %q", gw.Name, f)
		}
		for _, row := range [][]string{{"connectivity", "c1→c2"}, {"connectivity", "c2→c1"}, {"service-discovery", "c1"}, {"gateway-failover", "c1→c2"}} {
			if f := fields(out, row...); len(f) < 3 {
				t.Errorf("no %s %s line", row[0], row[1])
			}
		}
	})

}

// ipv6Carried says whether the ClusterSet lists an IPv6 pod CIDR for a member.
func ipv6Carried(cs *straitv1.ClusterSet) bool {
	for _, c := range cs.Spec.Clusters {
		for _, p := range c.PodCIDRs {
			if strings.Contains(p, ":") {
				return true
			}
		}
	}
	return false
}
