package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"sigs.k8s.io/yaml"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

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
		env.Kubectl(t, "c2", "apply", "--server-side", "-k", env.Lab.InstallDir("c2"))
		env.Kubectl(t, "c2", "-n", straitv1.SystemNamespace, "rollout", "status", "daemonset/strait-agent", "--timeout=3m")
	})
	p := labtest.StartProber(src.NS, target)
	start := time.Now()
	env.Kubectl(t, "c2", "apply", "--server-side", "-k", upgrade)
	env.Kubectl(t, "c2", "-n", straitv1.SystemNamespace, "rollout", "status", "daemonset/strait-agent", "--timeout=3m")
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
	// The rollout's handovers are graceful (the kubelet stops each agent with a SIGTERM),
	// and a graceful handover's outage is held to a crash's, as FailOver holds it.
	if gap > labtest.CrashFailoverBound {
		from, to := p.Longest()
		t.Errorf("c1 → c2 went %s without an answer during the rollout, from %s to %s, want at most %s (a failover's)",
			gap.Round(time.Millisecond), from.Format("15:04:05.000"), to.Format("15:04:05.000"), labtest.CrashFailoverBound)
		for _, c := range members() {
			t.Logf("%s's agents, last lines:\n%s", c, env.StraitLogs(t, c, labtest.AgentApp, "agent", 30))
			gw := env.ActiveGateway(t, c)
			t.Logf("%s: active gateway %s; its Peers:\n%s", c, gw.Name,
				env.Kubectl(t, c, "-n", straitv1.SystemNamespace, "get", "peers.strait.io", "-o", "yaml"))
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
