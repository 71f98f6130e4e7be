package lab

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/straitnet/strait/lab/topology"
)

// The member overlay, built by kustomize against the real kustomize/member as kubectl
// apply -k does: charon gets --libipsec, and a lab with a gateway Lease timing gives the
// agent its three flags (docs/agent.md's advice to users of a stall-prone API server),
// where a lab without one leaves the agent's arguments as the base has them.
func TestInstallOverlayGivesTheAgentTheLabsLeaseTiming(t *testing.T) {
	base, err := filepath.Abs(filepath.Join("..", "kustomize", "member"))
	if err != nil {
		t.Fatal(err)
	}
	agentArgs := func(lease *topology.GatewayLease) (agent, charon []string) {
		t.Helper()
		dir := t.TempDir()
		rel, err := filepath.Rel(dir, base)
		if err != nil {
			t.Fatal(err)
		}
		overlay, err := installOverlay(rel, true, "", lease)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), overlay, 0o644); err != nil {
			t.Fatal(err)
		}
		rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
		if err != nil {
			t.Fatalf("kustomize build of the overlay:\n%s\n%v", overlay, err)
		}
		for _, r := range rm.Resources() {
			if r.GetKind() != "DaemonSet" || r.GetName() != "strait-agent" {
				continue
			}
			data, err := r.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			var ds appsv1.DaemonSet
			if err := yaml.Unmarshal(data, &ds); err != nil {
				t.Fatal(err)
			}
			return ds.Spec.Template.Spec.Containers[0].Args, ds.Spec.Template.Spec.Containers[1].Args
		}
		t.Fatal("no DaemonSet strait-agent in the overlay's build")
		return nil, nil
	}
	plain, charon := agentArgs(nil)
	if !slices.Contains(charon, "--libipsec") {
		t.Errorf("charon's args %v: want --libipsec", charon)
	}
	timed, _ := agentArgs(&topology.StallProneLease)
	want := append(slices.Clone(plain), "--lease-duration=2s", "--renew-deadline=1.5s", "--retry-period=500ms")
	if !slices.Equal(timed, want) {
		t.Errorf("the agent's args with the stall-prone timing: %v, want %v", timed, want)
	}
	for _, a := range plain {
		for _, flag := range []string{"--lease-duration", "--renew-deadline", "--retry-period"} {
			if strings.HasPrefix(a, flag) {
				t.Errorf("the agent's args without a timing: %v, want the base's (no %s)", plain, flag)
			}
		}
	}
}
