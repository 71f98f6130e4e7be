package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// TestStraitUninstallIsGitFirstAndLeavesNothing: strait uninstall, given the hub's and
// the members' kubeconfigs, refuses while Flux applies the ClusterSet (exit 2, naming the
// Kustomization and --suspend-gitops) and deletes nothing; with --suspend-gitops it
// suspends that Kustomization, says so, removes Strait from the members and the hub and
// reports it, and nothing of the install, no CRD, no Corefile block and no kernel state
// is left (labtest's CheckNothingLeft, as for the documented uninstall); strait diagnose
// then finds no member. Then the Kustomization is resumed and lab up installs it again.
func TestStraitUninstallIsGitFirstAndLeavesNothing(t *testing.T) {
	env.Require(t)
	cs := env.ClusterSet(t)
	flux := types.NamespacedName{Namespace: cs.Labels["kustomize.toolkit.fluxcd.io/namespace"], Name: cs.Labels["kustomize.toolkit.fluxcd.io/name"]}
	if flux.Name == "" {
		t.Fatalf("the lab's ClusterSet carries no Flux labels: %v", cs.Labels)
	}
	t.Cleanup(func() { env.UpAgain(t) })
	t.Cleanup(func() { suspendKustomization(t, flux, false) }) // before lab up again
	var args []string
	for _, c := range append([]string{topology.HubName}, members()...) {
		args = append(args, "--member-kubeconfig", c+"="+env.Lab.State().KubeconfigPath(c))
	}

	out, errOut, code := straitLong(t, append([]string{"uninstall"}, args...)...)
	t.Logf("strait uninstall: exit %d\n%s%s", code, out, errOut)
	if code != 2 || !strings.Contains(errOut, "is applied by Flux Kustomization "+flux.String()) || !strings.Contains(errOut, "--suspend-gitops") {
		t.Errorf("strait uninstall under Flux: exit %d; want 2 and a message naming Flux Kustomization %s and --suspend-gitops", code, flux)
	}
	_ = env.ClusterSet(t) // fails the test when the refused uninstall deleted it

	start := time.Now()
	out, errOut, code = straitLong(t, append([]string{"uninstall", "--suspend-gitops"}, args...)...)
	t.Logf("strait uninstall --suspend-gitops: exit %d in %s\n%s%s", code, time.Since(start).Round(time.Second), out, errOut)
	if code != 0 {
		t.Fatalf("strait uninstall --suspend-gitops: exit %d", code)
	}
	for _, s := range []string{"suspended Flux Kustomization " + flux.String(), "removed hub: ClusterSet " + cs.Namespace + "/" + cs.Name,
		"removed c1: DaemonSet strait-system/strait-agent", "removed c2: namespace strait-system", "removed hub: namespace strait-system",
		"removed c1: CustomResourceDefinition memberships.strait.io"} {
		if !strings.Contains(out, s) {
			t.Errorf("the report does not say %q", s)
		}
	}
	env.CheckNothingLeft(t)

	out, errOut, code = straitLong(t, append([]string{"diagnose"}, args...)...)
	t.Logf("strait diagnose after the uninstall: exit %d\n%s%s", code, out, errOut)
	for _, c := range members() {
		if !strings.Contains(errOut, "skipped: "+c) || !strings.Contains(errOut, "no Strait Membership") {
			t.Errorf("diagnose after the uninstall does not say %s is no member", c)
		}
	}
	if code != 3 || !strings.Contains(errOut, "no member to diagnose") {
		t.Errorf("diagnose after the uninstall: exit %d, want 3 and no member to diagnose", code)
	}
}

// straitLong runs the built strait with a timeout long enough for an uninstall.
func straitLong(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return labtest.Run(t, 8*time.Minute, env.Strait, args...)
}

// suspendKustomization sets a Flux Kustomization's spec.suspend in the hub.
func suspendKustomization(t *testing.T, k types.NamespacedName, suspend bool) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"})
	u.SetNamespace(k.Namespace)
	u.SetName(k.Name)
	patch := []byte(`{"spec":{"suspend":false}}`)
	if suspend {
		patch = []byte(`{"spec":{"suspend":true}}`)
	}
	if err := env.Client(t, topology.HubName).Patch(context.Background(), u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Error(err)
	}
}

// TestUninstallLeavesNothing removes Strait as docs/install.md tells users
// (labtest's Env.Uninstall: the Flux sync first, then kubectl delete -k in every
// cluster) and lists what is left: no object of the install, no CRD, no Corefile block,
// no kernel state on any node. Then lab up installs it again for the tests after.
// It runs late in the suite (this file), not beside the rolling upgrade: right after
// TestFailoverWithTheHubDown the hub and Flux wait out their Leases (15 s, timed from
// when a restarted pod first sees them) before they act, and its prune took 20-39 s
// instead of 1.
func TestUninstallLeavesNothing(t *testing.T) {
	env.Require(t)
	t.Cleanup(func() { env.UpAgain(t) })
	// The agents clean their nodes on the way out when their DaemonSet goes, even while
	// the cluster is still a member (nothing else would).
	env.Kubectl(t, "c2", "-n", straitv1.SystemNamespace, "delete", "daemonset/strait-agent", "--wait", "--timeout=2m")
	env.Kubectl(t, "c2", "-n", straitv1.SystemNamespace, "wait", "--for=delete", "pod", "-l", "app.kubernetes.io/name="+labtest.AgentApp, "--timeout=2m")
	c2, _ := env.Topo.Cluster("c2")
	for _, n := range c2.Nodes {
		if left := labtest.StraitKernelState(t, n.Namespace); left != "" {
			t.Errorf("c2: the agent's DaemonSet is gone but Strait's kernel state is left on %s:\n%s", n.Name, left)
		}
	}
	env.Uninstall(t)
	env.CheckNothingLeft(t)
}
