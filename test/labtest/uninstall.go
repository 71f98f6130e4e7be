package labtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/require"
)

// Kubectl runs kubectl against a cluster of the lab and fails the test on an error.
func (e *Env) Kubectl(t testing.TB, cluster string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := e.Lab.Kubectl(ctx, cluster, args...)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// Uninstall removes Strait as docs/install.md tells users: the Flux sync first (the
// GitRepository and the Kustomization go; with prune on, Flux deletes the ClusterSet,
// whose finalizer holds until the hub has removed what it wrote in the members, and the
// members' agents and strait dns clean up after their Membership), then kubectl delete
// -k of the install in every member and in the hub. CheckNothingLeft lists what is left.
func (e *Env) Uninstall(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	step := func(what string) { t.Logf("uninstall: %s (%.1fs)", what, time.Since(start).Seconds()) }
	if _, err := e.Lab.Kubectl(ctx, topology.HubName, "delete", "-k", e.Lab.FluxSyncDir(), "--wait", "--timeout=3m"); err != nil {
		t.Fatalf("%v\nFlux in the hub:\n%s", err, e.FluxState())
	}
	require.Eventually(t, 3*time.Minute, "hub: Flux prunes the ClusterSet", func() error {
		list := &straitv1.ClusterSetList{}
		if err := e.Client(t, topology.HubName).List(context.Background(), list); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d ClusterSets left", len(list.Items))
		}
		return nil
	})
	step("Flux's sync deleted, the ClusterSet pruned")
	// The members have left: strait dns takes its block out of the Corefile within
	// seconds, while the install (and its role on kube-system/coredns) is still there.
	for _, c := range e.Topo.Clusters {
		require.Eventually(t, 30*time.Second, c.Name+": strait dns's block out of the Corefile", func() error {
			if strings.Contains(e.Corefile(t, c.Name), corefile.BeginMarker) {
				return fmt.Errorf("block still there")
			}
			return nil
		})
	}
	// The members side by side, as strait uninstall takes them: most of each is waiting
	// for its namespace to go.
	step("strait dns's blocks out of the Corefiles")
	errs := make([]error, len(e.Topo.Clusters))
	var wg sync.WaitGroup
	for i, c := range e.Topo.Clusters {
		wg.Go(func() {
			_, errs[i] = e.Lab.Kubectl(ctx, c.Name, "delete", "-k", e.Lab.InstallDir(c.Name), "--ignore-not-found", "--wait", "--timeout=3m")
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	step("the members' installs deleted")
	e.Kubectl(t, topology.HubName, "delete", "-k", e.Lab.InstallDir(topology.HubName), "--ignore-not-found", "--wait", "--timeout=3m")
	step("the hub's install deleted")
}

// CheckNothingLeft fails t for anything of Strait's left after Uninstall: an object of
// the install or a CRD of Strait's or of the MCS API in any cluster, strait dns's block
// in a member's Corefile, kernel state of Strait's on any node.
func (e *Env) CheckNothingLeft(t testing.TB) {
	t.Helper()
	clusters := []string{topology.HubName}
	for _, c := range e.Topo.Clusters {
		clusters = append(clusters, c.Name)
	}
	for _, cluster := range clusters {
		if left := strings.TrimSpace(e.Kubectl(t, cluster, "get", "-k", e.Lab.InstallDir(cluster), "--ignore-not-found", "-o", "name")); left != "" {
			t.Errorf("%s: objects of the install left: %s", cluster, left)
		}
		for _, crd := range strings.Fields(e.Kubectl(t, cluster, "get", "crd", "-o", "name")) {
			if strings.HasSuffix(crd, "strait.io") || strings.HasSuffix(crd, "multicluster.x-k8s.io") {
				t.Errorf("%s: %s left", cluster, crd)
			}
		}
	}
	for _, c := range e.Topo.Clusters {
		if cf := e.Corefile(t, c.Name); strings.Contains(cf, corefile.BeginMarker) {
			t.Errorf("%s: strait dns's block is still in CoreDNS's Corefile:\n%s", c.Name, cf)
		}
		for _, n := range c.Nodes {
			if left := StraitKernelState(t, n.Namespace); left != "" {
				t.Errorf("%s: Strait's kernel state left on %s:\n%s", c.Name, n.Name, left)
			}
		}
	}
}

// FluxState is what an operator looks at when a Flux object will not go: the
// controllers' pods, the sources and Kustomizations with their finalizers and status,
// and the controllers' last log lines (of the container before, too, after a restart).
func (e *Env) FluxState() string {
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
		out, err := e.Lab.Kubectl(ctx, topology.HubName, args...)
		fmt.Fprintf(&b, "$ kubectl %s (%v)\n%s\n", strings.Join(args, " "), err, out)
	}
	return b.String()
}

// Corefile is a member's CoreDNS Corefile.
func (e *Env) Corefile(t testing.TB, cluster string) string {
	t.Helper()
	cm, err := e.HostClient(t, cluster).CoreV1().ConfigMaps("kube-system").Get(context.Background(), "coredns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data[corefile.Key]
}

// StraitKernelState is everything of Strait's in a node's network namespace: what
// `straitd agent --dump` prints (the routes and rules of both families, vx-strait, table
// ip strait with its chains: the MSS clamp and the masquerade bypass keep-remote-source,
// and table ip6 strait where the node handles IPv6), the fence table, the cables'
// devices and any IPsec SA or policy.
func StraitKernelState(t testing.TB, ns string) string {
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
	for _, f := range []kernel.Family{kernel.IPv4, kernel.IPv6} {
		fence, err := k.NFTable(ctx, f, kernel.FenceTable)
		if err != nil {
			t.Fatal(err)
		}
		if fence != nil {
			dump += "nftables table " + string(f) + " " + kernel.FenceTable + "\n"
		}
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
