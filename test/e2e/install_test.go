package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/netns"
	"github.com/straitnet/strait/test/require"
)

// kubectl runs kubectl against a cluster of the lab and fails the test on an error.
func kubectl(t testing.TB, cluster string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := env.Lab.Kubectl(ctx, cluster, args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestServiceAccountsCanDoOnlyTheirJob asks the lab's API servers, as a person would
// with kubectl auth can-i, what the installed ServiceAccounts may do: in particular the
// agent cannot read the hub-access token (the hub's write role in the member) or any
// Secret but its own two.
func TestServiceAccountsCanDoOnlyTheirJob(t *testing.T) {
	env.Require(t)
	sa := func(name string) string { return "--as=system:serviceaccount:" + straitv1.SystemNamespace + ":" + name }
	for _, tc := range []struct {
		cluster, as string
		args        []string
		want        bool
	}{
		{"c1", "strait-agent", []string{"get", "secret/strait-hub-access-token"}, false},
		{"c1", "strait-agent", []string{"list", "secrets"}, false},
		{"c1", "strait-agent", []string{"get", "secret/strait-wireguard-key"}, true},
		{"c1", "strait-agent", []string{"update", "secret/strait-ipsec-psk"}, false},
		{"c1", "strait-agent", []string{"update", "lease/strait-gateway"}, true},
		{"c1", "strait-agent", []string{"update", "lease/kube-scheduler", "-n", "kube-system"}, false},
		{"c1", "strait-agent", []string{"get", "daemonset/strait-agent"}, true},
		{"c1", "strait-dns", []string{"get", "secrets"}, false},
		{"c1", "strait-dns", []string{"update", "configmap/coredns", "-n", "kube-system"}, true},
		{"c1", "strait-dns", []string{"update", "configmap/kube-proxy", "-n", "kube-system"}, false},
		{"c1", "strait-hub-access", []string{"get", "secret/strait-hub-access-token"}, false},
		{"c1", "strait-hub-access", []string{"patch", "memberships.strait.io/membership"}, true},
		{"c1", "strait-hub-access", []string{"delete", "nodes"}, false},
		{topology.HubName, "strait-hub", []string{"list", "clustersets.strait.io", "-A"}, true},
		{topology.HubName, "strait-hub", []string{"get", "secret/c1-kubeconfig"}, true},
		{topology.HubName, "strait-hub", []string{"get", "secrets", "-n", "kube-system"}, false},
		{topology.HubName, "strait-hub", []string{"create", "clustersets.strait.io"}, false},
	} {
		args := append([]string{"auth", "can-i", sa(tc.as), "-n", straitv1.SystemNamespace}, tc.args...)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := env.Lab.Kubectl(ctx, tc.cluster, args...)
		cancel()
		// can-i exits 1 with "no" on stdout for a refusal.
		got := strings.TrimSpace(string(out)) == "yes"
		if err != nil && strings.TrimSpace(string(out)) != "no" {
			t.Errorf("%s: kubectl %s: %v", tc.cluster, strings.Join(args, " "), err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: %s may %s: %v, want %v", tc.cluster, tc.as, strings.Join(tc.args, " "), got, tc.want)
		}
	}
}

// TestRollingUpgradeKeepsTrafficFlowing rolls a new agent image over c2's DaemonSet the
// way a user upgrades (a new tag in the overlay, kubectl apply --server-side -k) while
// c1's client GETs c2's whereami: the longest gap must stay within a failover's.
func TestRollingUpgradeKeepsTrafficFlowing(t *testing.T) {
	env.Require(t)
	const tag = "e2e-upgrade"
	img := retag(t, filepath.Join(env.Root, "bin", "images", "straitd.tar"), lab.ImageName(lab.StraitdImage)+":"+tag)
	ctx := context.Background()
	if err := env.Lab.LoadImages(ctx, img); err != nil {
		t.Fatal(err)
	}
	upgrade := t.TempDir()
	rel, err := filepath.Rel(upgrade, env.Lab.InstallDir("c2"))
	if err != nil {
		t.Fatal(err)
	}
	writeOverlay(t, upgrade, rel, tag)
	src, target := env.CrossTraffic(t, "c1", "c2")
	// Back to the lab's own install whatever happens.
	t.Cleanup(func() {
		kubectl(t, "c2", "apply", "--server-side", "-k", env.Lab.InstallDir("c2"))
		kubectl(t, "c2", "-n", straitv1.SystemNamespace, "rollout", "status", "daemonset/strait-agent", "--timeout=3m")
	})
	p := labtest.StartProber(src.NS, target)
	start := time.Now()
	kubectl(t, "c2", "apply", "--server-side", "-k", upgrade)
	kubectl(t, "c2", "-n", straitv1.SystemNamespace, "rollout", "status", "daemonset/strait-agent", "--timeout=3m")
	rolled := time.Since(start)
	// The longest gap, once traffic flows again: an outage that outlasts the rollout is
	// measured to its end, not cut short by it.
	settled := time.Now()
	for deadline := settled.Add(30 * time.Second); !p.AnsweredAfter(settled.Add(time.Second)) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	gap := p.Gap()
	for _, pod := range env.StraitPods(t, "c2", labtest.AgentApp, "") {
		if got := pod.Spec.Containers[0].Image; !strings.HasSuffix(got, ":"+tag) {
			t.Errorf("agent pod %s runs %s after the upgrade", pod.Name, got)
		}
	}
	t.Logf("rolling upgrade of c2's agents (%d nodes, maxUnavailable 1) took %s; longest time without an answer c1 → c2: %s",
		len(env.StraitPods(t, "c2", labtest.AgentApp, "")), rolled.Round(time.Millisecond), gap.Round(time.Millisecond))
	if gap > 2*time.Second {
		from, to := p.Longest()
		t.Errorf("c1 → c2 went %s without an answer during the rollout, from %s to %s (a crash failover takes < 2 s)",
			gap.Round(time.Millisecond), from.Format("15:04:05.000"), to.Format("15:04:05.000"))
		for _, c := range members() {
			t.Logf("%s's agents, last lines:\n%s", c, env.StraitLogs(t, c, labtest.AgentApp, "agent", 30))
			gw := env.ActiveGateway(t, c)
			t.Logf("%s: active gateway %s; its Peers:\n%s", c, gw.Name,
				kubectl(t, c, "-n", straitv1.SystemNamespace, "get", "peers.strait.io", "-o", "yaml"))
			for _, args := range [][]string{{"-d", "link", "show"}, {"route", "show", "table", "all"}} {
				out, err := exec.Command("ip", append([]string{"-n", gw.Namespace}, args...)...).CombinedOutput()
				t.Logf("%s: ip %s (%v):\n%s", gw.Name, strings.Join(args, " "), err, out)
			}
		}
	}
}

// retag writes the image of a tarball under another tag, as a new release would be.
func retag(t testing.TB, tarballPath, ref string) string {
	t.Helper()
	img, err := tarball.ImageFromPath(tarballPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "upgrade.tar")
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		t.Fatal(err)
	}
	return out
}

// writeOverlay is a user's next release: their overlay with a new tag for straitd.
func writeOverlay(t testing.TB, dir, base, tag string) {
	t.Helper()
	k, err := yaml.Marshal(map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
		"resources": []string{base},
		"images":    []map[string]string{{"name": lab.ImageName(lab.StraitdImage), "newTag": tag}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), k, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUninstallLeavesNothing removes Strait as docs/install.md tells users (the Flux
// sync first: Flux prunes the ClusterSet and the hub the members; then kubectl delete -k
// in every cluster) and lists what is left: no object of the install, no CRD, no Corefile block,
// no kernel state on any node. Then lab up installs it again for the tests after.
func TestUninstallLeavesNothing(t *testing.T) {
	env.Require(t)
	t.Cleanup(func() { env.UpAgain(t) })
	// The agents clean their nodes on the way out when their DaemonSet goes, even while
	// the cluster is still a member (nothing else would).
	kubectl(t, "c2", "-n", straitv1.SystemNamespace, "delete", "daemonset/strait-agent", "--wait", "--timeout=2m")
	kubectl(t, "c2", "-n", straitv1.SystemNamespace, "wait", "--for=delete", "pod", "-l", "app.kubernetes.io/name="+labtest.AgentApp, "--timeout=2m")
	c2, _ := env.Topo.Cluster("c2")
	for _, n := range c2.Nodes {
		if left := straitKernelState(t, n.Namespace); left != "" {
			t.Errorf("c2: the agent's DaemonSet is gone but Strait's kernel state is left on %s:\n%s", n.Name, left)
		}
	}
	// The GitRepository and the Kustomization go; with prune on, Flux deletes what the
	// Kustomization applied, and the ClusterSet's finalizer holds until the hub has
	// removed what it wrote in the members.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := env.Lab.Kubectl(ctx, topology.HubName, "delete", "-k", env.Lab.FluxSyncDir(), "--wait", "--timeout=3m"); err != nil {
		t.Fatalf("%v\nFlux in the hub:\n%s", err, fluxState())
	}
	require.Eventually(t, 3*time.Minute, "hub: Flux prunes the ClusterSet", func() error {
		list := &straitv1.ClusterSetList{}
		if err := env.Client(t, topology.HubName).List(context.Background(), list); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d ClusterSets left", len(list.Items))
		}
		return nil
	})
	// The members have left: strait dns takes its block out of the Corefile within
	// seconds, while the install (and its role on kube-system/coredns) is still there.
	for _, c := range members() {
		require.Eventually(t, 30*time.Second, c+": strait dns's block out of the Corefile", func() error {
			if strings.Contains(corefileOf(t, c), corefile.BeginMarker) {
				return fmt.Errorf("block still there")
			}
			return nil
		})
	}
	for _, c := range members() {
		kubectl(t, c, "delete", "-k", env.Lab.InstallDir(c), "--ignore-not-found", "--wait", "--timeout=3m")
	}
	kubectl(t, topology.HubName, "delete", "-k", env.Lab.InstallDir(topology.HubName), "--ignore-not-found", "--wait", "--timeout=3m")

	for _, cluster := range append(members(), topology.HubName) {
		if left := strings.TrimSpace(kubectl(t, cluster, "get", "-k", env.Lab.InstallDir(cluster), "--ignore-not-found", "-o", "name")); left != "" {
			t.Errorf("%s: objects of the install left: %s", cluster, left)
		}
		for _, crd := range strings.Fields(kubectl(t, cluster, "get", "crd", "-o", "name")) {
			if strings.HasSuffix(crd, "strait.io") || strings.HasSuffix(crd, "multicluster.x-k8s.io") {
				t.Errorf("%s: %s left", cluster, crd)
			}
		}
	}
	for _, cluster := range members() {
		if cf := corefileOf(t, cluster); strings.Contains(cf, corefile.BeginMarker) {
			t.Errorf("%s: strait dns's block is still in CoreDNS's Corefile:\n%s", cluster, cf)
		}
		c, _ := env.Topo.Cluster(cluster)
		for _, n := range c.Nodes {
			if left := straitKernelState(t, n.Namespace); left != "" {
				t.Errorf("%s: Strait's kernel state left on %s:\n%s", cluster, n.Name, left)
			}
		}
	}
}

// fluxState is what an operator looks at when a Flux object will not go: the
// controllers' pods, the sources and Kustomizations with their finalizers and status,
// and the controllers' last log lines (of the container before, too, after a restart).
func fluxState() string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var b strings.Builder
	for _, args := range [][]string{
		{"-n", "flux-system", "get", "pods", "-o", "wide"},
		{"get", "gitrepositories,kustomizations", "-A", "-o", "yaml"},
		{"-n", "flux-system", "logs", "deploy/source-controller", "--tail=40"},
		{"-n", "flux-system", "logs", "deploy/source-controller", "--tail=20", "--previous"},
		{"-n", "flux-system", "logs", "deploy/kustomize-controller", "--tail=20"},
	} {
		out, err := env.Lab.Kubectl(ctx, topology.HubName, args...)
		fmt.Fprintf(&b, "$ kubectl %s (%v)\n%s\n", strings.Join(args, " "), err, out)
	}
	return b.String()
}

// corefileOf is a member's CoreDNS Corefile.
func corefileOf(t testing.TB, cluster string) string {
	t.Helper()
	cm, err := env.HostClient(t, cluster).CoreV1().ConfigMaps("kube-system").Get(context.Background(), "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data[corefile.Key]
}

// straitKernelState is everything of Strait's in a node's network namespace: what
// `straitd agent --dump` prints, the cables' devices and any IPsec SA or policy.
func straitKernelState(t testing.TB, ns string) string {
	t.Helper()
	h, err := vnetns.GetFromPath(netns.Path(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	k, err := kernel.NewLinux(h)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	ctx := context.Background()
	dump, err := kernel.Dump(ctx, k, route.Ownership())
	if err != nil {
		t.Fatal(err)
	}
	fence, err := k.NFTable(ctx, kernel.FenceTable)
	if err != nil {
		t.Fatal(err)
	}
	if fence != nil {
		dump += "nftables table ip " + kernel.FenceTable + "\n"
	}
	links, err := k.Links(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if strings.HasPrefix(l.Name, "strait") || l.Name == "ipsec0" {
			dump += fmt.Sprintf("link %s %s\n", l.Name, l.Kind)
		}
	}
	// charon's SAs and policies, where the kernel does ESP.
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	states, err := nl.XfrmStateList(netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	policies, err := nl.XfrmPolicyList(netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	if len(states)+len(policies) > 0 {
		dump += fmt.Sprintf("xfrm: %d states, %d policies\n", len(states), len(policies))
	}
	return dump
}
