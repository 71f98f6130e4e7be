package topology

import (
	"strings"
	"testing"
)

func TestClusterShapes(t *testing.T) {
	cs := loadExample(t, "basic")
	spec := DefaultSpec("")
	spec.Clusters = map[string]ClusterShape{
		"c1": {CNI: CNIKindnetMasq, KubeProxyMode: KubeProxyIPTables},
		"c2": {CNI: CNIFlannel, Masquerade: MasqueradeNFTables},
	}
	l, errs := Compute(cs, spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := map[string]ClusterShape{
		"c1": {CNI: CNIKindnetMasq, Masquerade: MasqueradeIPTables, KubeProxyMode: KubeProxyIPTables},
		"c2": {CNI: CNIFlannel, Masquerade: MasqueradeNFTables, KubeProxyMode: KubeProxyNFTables},
	}
	for _, c := range l.Clusters {
		if c.Shape != want[c.Name] {
			t.Errorf("%s: shape %+v, want %+v", c.Name, c.Shape, want[c.Name])
		}
	}
	l, errs = Compute(cs, DefaultSpec(""))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := l.Clusters[0].Shape; got != (ClusterShape{CNI: CNIBridge, KubeProxyMode: KubeProxyNFTables}) || got.Masquerades() {
		t.Errorf("default shape %+v, want bridge and kube-proxy nftables, no masquerade", got)
	}
}

// In a flannel cluster pods cross nodes through flannel.1, which flanneld routes: the lab
// adds no host-gw route between its nodes (one would take the packets first). The service
// CIDR route stays on the nodes, and the control plane still reaches every node's pods
// through that node.
func TestFlannelClusterHasNoHostGWRoutes(t *testing.T) {
	cs := loadExample(t, "basic")
	spec := DefaultSpec("")
	spec.Clusters = map[string]ClusterShape{"c2": {CNI: CNIFlannel}}
	l, errs := Compute(cs, spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, c := range l.Clusters {
		for _, n := range c.Nodes {
			var toPods, toServices int
			for _, r := range n.Routes {
				switch {
				case r.Dst.Bits() == 0: // the default route, via the router
				case c.PodCIDR.Overlaps(r.Dst):
					toPods++
				case r.Dst == c.ServiceCIDR:
					toServices++
				}
			}
			if wantPods := map[bool]int{true: 0, false: len(c.Nodes) - 1}[c.Shape.RoutesPods()]; toPods != wantPods || toServices != 1 {
				t.Errorf("%s (%s): %d routes to pods, %d to services; want %d and 1", n.Name, c.Shape.CNI, toPods, toServices, wantPods)
			}
		}
		var cpToPods int
		for _, r := range c.ControlPlane.Routes {
			if r.Dst.Bits() > 0 && c.PodCIDR.Overlaps(r.Dst) {
				cpToPods++
			}
		}
		if cpToPods != len(c.Nodes) {
			t.Errorf("%s control plane: %d routes to node pod CIDRs, want %d", c.Name, cpToPods, len(c.Nodes))
		}
	}
	if !l.Clusters[1].Shape.RoutesPods() || l.Clusters[0].Shape.RoutesPods() {
		t.Fatalf("shapes %v, %v: want c2 alone on flannel", l.Clusters[0].Shape, l.Clusters[1].Shape)
	}
}

func TestClusterShapeErrorsNameTheField(t *testing.T) {
	cs := loadExample(t, "basic")
	for _, tc := range []struct {
		shapes map[string]ClusterShape
		want   []string
	}{
		{map[string]ClusterShape{"c1": {CNI: "calico"}}, []string{`lab.clusters[c1].cni: Unsupported value: "calico"`, `"kindnet-masq"`}},
		{map[string]ClusterShape{"c1": {KubeProxyMode: "ipvs"}}, []string{`lab.clusters[c1].kubeProxyMode: Unsupported value: "ipvs"`}},
		{map[string]ClusterShape{"c2": {CNI: CNIFlannel, Masquerade: "ebpf"}}, []string{`lab.clusters[c2].masquerade: Unsupported value: "ebpf"`}},
		{map[string]ClusterShape{"c1": {Masquerade: MasqueradeNFTables}}, []string{`lab.clusters[c1].masquerade: Invalid value: "nftables": the bridge CNI never masquerades`}},
		{map[string]ClusterShape{"c2": {GatewayNAT: "nat"}}, []string{`lab.clusters[c2].gatewayNAT: Unsupported value: "nat": supported values: "oneToOne", "masquerade"`}},
		{map[string]ClusterShape{"c3": {CNI: CNIKindnetMasq}}, []string{`lab.clusters[c3]: Invalid value: "c3": not a cluster of the ClusterSet (its clusters: c1, c2)`}},
	} {
		spec := DefaultSpec("")
		spec.Clusters = tc.shapes
		_, errs := Compute(cs, spec)
		got := errs.ToAggregate()
		if got == nil {
			t.Errorf("%+v: accepted", tc.shapes)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(got.Error(), w) {
				t.Errorf("%+v: error %q lacks %q", tc.shapes, got, w)
			}
		}
	}
}

// A lab file's unjoined clusters must be the ClusterSet's, each once, and leave it one.
func TestUnjoinedErrorsNameTheField(t *testing.T) {
	cs := loadExample(t, "basic")
	for _, tc := range []struct {
		unjoined []string
		want     string
	}{
		{[]string{"c3"}, `lab.unjoined[0]: Invalid value: "c3": not a cluster of the ClusterSet (its clusters: c1, c2)`},
		{[]string{"c2", "c2"}, `lab.unjoined[1]: Duplicate value: "c2"`},
		{[]string{"c1", "c2"}, `lab.unjoined: Invalid value: ["c1","c2"]: leaves the ClusterSet without a cluster`},
	} {
		spec := DefaultSpec("")
		spec.Unjoined = tc.unjoined
		_, errs := Compute(cs, spec)
		if got := errs.ToAggregate(); got == nil || !strings.Contains(got.Error(), tc.want) {
			t.Errorf("unjoined %v: error %v, want %q", tc.unjoined, got, tc.want)
		}
	}
	spec := DefaultSpec("")
	spec.Unjoined = []string{"c2"}
	l, errs := Compute(cs, spec)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	// The lab still builds c2: its nodes, LAN and router.
	if c, ok := l.Cluster("c2"); !ok || len(c.Nodes) == 0 {
		t.Errorf("unjoined c2: not in the lab's clusters")
	}
}

// A lab file's gitops names Flux or Argo CD; anything else is refused, naming the field.
func TestGitOpsIsFluxOrArgoCD(t *testing.T) {
	cs := loadExample(t, "basic")
	for _, g := range []string{"", GitOpsFlux, GitOpsArgoCD} {
		spec := DefaultSpec("")
		spec.GitOps = g
		if _, errs := Compute(cs, spec); len(errs) > 0 {
			t.Errorf("gitops %q: %v", g, errs)
		}
	}
	spec := DefaultSpec("")
	spec.GitOps = "fleet"
	_, errs := Compute(cs, spec)
	want := `lab.gitops: Unsupported value: "fleet": supported values: "flux", "argocd"`
	if got := errs.ToAggregate(); got == nil || !strings.Contains(got.Error(), want) {
		t.Errorf("gitops fleet: error %v, want %q", got, want)
	}
}
