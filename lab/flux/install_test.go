package flux

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/straitnet/strait/test/clusters"
)

// pinned is the release test/fluxbin pins.
func pinned(t *testing.T) Release {
	t.Helper()
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Locate(context.Background(), filepath.Join(root, "test", "fluxbin"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func byKind(objs []*unstructured.Unstructured, kind string) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetKind() == kind {
			m[o.GetName()] = o
		}
	}
	return m
}

func TestInstallHasBothControllersCRDsInFluxSystem(t *testing.T) {
	r := pinned(t)
	objs, err := r.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var crds []string
	for name := range byKind(objs, "CustomResourceDefinition") {
		crds = append(crds, name)
	}
	sort.Strings(crds)
	want := []string{
		"buckets.source.toolkit.fluxcd.io", "externalartifacts.source.toolkit.fluxcd.io",
		"gitrepositories.source.toolkit.fluxcd.io", "helmcharts.source.toolkit.fluxcd.io",
		"helmrepositories.source.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io",
		"ocirepositories.source.toolkit.fluxcd.io",
	}
	if !slices.Equal(crds, want) {
		t.Errorf("CRDs %v, want %v", crds, want)
	}
	if objs[0].GetKind() != "Namespace" || objs[0].GetName() != Namespace {
		t.Errorf("the first object is %s %s, want the Namespace %s (an apply needs it first)", objs[0].GetKind(), objs[0].GetName(), Namespace)
	}
	for i, o := range objs {
		if o.GetKind() == "Deployment" && slices.ContainsFunc(objs[i:], func(o *unstructured.Unstructured) bool { return o.GetKind() == "CustomResourceDefinition" }) {
			t.Errorf("Deployment %s comes before a CRD", o.GetName())
		}
		clusterScoped := slices.Contains([]string{"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}, o.GetKind())
		if !clusterScoped && o.GetNamespace() != Namespace {
			t.Errorf("%s %s is in namespace %q, want %s", o.GetKind(), o.GetName(), o.GetNamespace(), Namespace)
		}
		if got := o.GetLabels()["app.kubernetes.io/version"]; got != r.Version {
			t.Errorf("%s %s: label app.kubernetes.io/version %q, want %s", o.GetKind(), o.GetName(), got, r.Version)
		}
	}
}

// Each controller runs the locally built image under its own ServiceAccount, and every
// binding grants a ServiceAccount that exists a role that exists: what `kubectl auth
// can-i` would show a person is that the controllers are allowed to work.
func TestEachControllerRunsItsImageUnderABoundServiceAccount(t *testing.T) {
	r := pinned(t)
	objs, err := r.Objects()
	if err != nil {
		t.Fatal(err)
	}
	deployments, accounts := byKind(objs, "Deployment"), byKind(objs, "ServiceAccount")
	roles, clusterRoles := byKind(objs, "Role"), byKind(objs, "ClusterRole")
	bound := map[string][]string{}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for name, b := range byKind(objs, kind) {
			ref, _, _ := unstructured.NestedStringMap(b.Object, "roleRef")
			switch {
			case ref["kind"] == "Role" && roles[ref["name"]] == nil,
				ref["kind"] == "ClusterRole" && clusterRoles[ref["name"]] == nil && ref["name"] != "cluster-admin":
				t.Errorf("%s %s binds the missing %s %s", kind, name, ref["kind"], ref["name"])
			}
			subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
			for _, s := range subjects {
				s := s.(map[string]any)
				if s["kind"] != "ServiceAccount" || s["namespace"] != Namespace || accounts[s["name"].(string)] == nil {
					t.Errorf("%s %s: subject %v is not a ServiceAccount of the install", kind, name, s)
					continue
				}
				bound[s["name"].(string)] = append(bound[s["name"].(string)], ref["name"])
			}
		}
	}
	for _, c := range Controllers() {
		d := deployments[c]
		if d == nil {
			t.Errorf("no Deployment %s", c)
			continue
		}
		sa, _, _ := unstructured.NestedString(d.Object, "spec", "template", "spec", "serviceAccountName")
		if sa != c {
			t.Errorf("Deployment %s runs as ServiceAccount %q, want %s", c, sa, c)
		}
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		if len(containers) != 1 {
			t.Fatalf("Deployment %s has %d containers, want Flux's one", c, len(containers))
		}
		if img := containers[0].(map[string]any)["image"]; img != r.Image(c) {
			t.Errorf("Deployment %s runs image %v, want %s", c, img, r.Image(c))
		}
		prefix := strings.TrimSuffix(c, "-controller") + "-"
		if !slices.Contains(bound[c], prefix+"manager-role") || !slices.Contains(bound[c], prefix+"leader-election-role") {
			t.Errorf("ServiceAccount %s is bound to %v, want its manager and leader-election roles", c, bound[c])
		}
	}
	if !slices.Contains(bound[KustomizeController], "cluster-admin") {
		t.Errorf("kustomize-controller is bound to %v: it applies any kind, Flux binds it to cluster-admin", bound[KustomizeController])
	}
}

// kustomize-controller downloads artifacts from the address source-controller advertises:
// its Service in flux-system, port 80 to the container's artifact server.
func TestSourceControllerServesArtifactsOnItsService(t *testing.T) {
	r := pinned(t)
	objs, err := r.Objects()
	if err != nil {
		t.Fatal(err)
	}
	svc := byKind(objs, "Service")[SourceController]
	if svc == nil {
		t.Fatal("no Service source-controller")
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 || ports[0].(map[string]any)["port"] != int64(80) || ports[0].(map[string]any)["targetPort"] != "http" {
		t.Fatalf("Service source-controller ports %v, want 80 to the port named http", ports)
	}
	selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	d := byKind(objs, "Deployment")[SourceController]
	podLabels, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
	for k, v := range selector {
		if podLabels[k] != v {
			t.Errorf("the Service selects %s=%s, source-controller's pods have %v", k, v, podLabels)
		}
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	var httpPort any
	for _, p := range c["ports"].([]any) {
		if p.(map[string]any)["name"] == "http" {
			httpPort = p.(map[string]any)["containerPort"]
		}
	}
	if httpPort != int64(9090) {
		t.Errorf("source-controller's port http is %v, want 9090", httpPort)
	}
	var adv string
	for _, a := range c["args"].([]any) {
		if v, ok := strings.CutPrefix(a.(string), "--storage-adv-addr="); ok {
			adv = v
		}
	}
	if adv != "source-controller.$(RUNTIME_NAMESPACE).svc.cluster.local." {
		t.Errorf("source-controller advertises artifacts at %q, want its Service's name", adv)
	}
}

func TestLocateRefusesAReleaseItCannotUse(t *testing.T) {
	sc, kc := ModulePath(SourceController), ModulePath(KustomizeController)
	for _, tc := range []struct {
		what string
		mods []downloaded
		want string
	}{
		{"two versions", []downloaded{{Path: sc, Version: "v1.9.6", Dir: "/a"}, {Path: kc, Version: "v1.9.5", Dir: "/b"}}, "kustomize-controller@v1.9.5: the other controller is at v1.9.6"},
		{"a refused download", []downloaded{{Path: sc, Version: "v1.9.6", Dir: "/a"}, {Path: kc, Version: "v1.9.6", Error: "403 Forbidden"}}, "kustomize-controller@v1.9.6: 403 Forbidden"},
		{"one missing", []downloaded{{Path: sc, Version: "v1.9.6", Dir: "/a"}}, "kustomize-controller: not downloaded"},
		{"another module", []downloaded{{Path: "github.com/fluxcd/helm-controller", Version: "v1.4.0", Dir: "/c"}}, "helm-controller: not one of the Flux controllers"},
	} {
		_, err := release(tc.mods)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.what, err, tc.want)
		}
	}
	r, err := release([]downloaded{{Path: kc, Version: "v1.9.6", Dir: "/b"}, {Path: sc, Version: "v1.9.6", Dir: "/a"}})
	if err != nil || r.Version != "v1.9.6" || r.Sources[SourceController] != "/a" || r.Sources[KustomizeController] != "/b" {
		t.Errorf("release of both at v1.9.6: %+v, %v", r, err)
	}
}

// TestControllersAreProbedForReadinessEvery2s: the lab's one change to the controllers'
// Deployments beyond their ServiceAccounts; the probe itself stays upstream's.
func TestControllersAreProbedForReadinessEvery2s(t *testing.T) {
	objs, err := pinned(t).Objects()
	if err != nil {
		t.Fatal(err)
	}
	deployments := byKind(objs, "Deployment")
	for _, c := range Controllers() {
		d := deployments[c]
		if d == nil {
			t.Fatalf("no Deployment %s", c)
		}
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		probe, _, _ := unstructured.NestedMap(containers[0].(map[string]any), "readinessProbe")
		period, _, _ := unstructured.NestedInt64(probe, "periodSeconds")
		if _, ok := probe["httpGet"]; !ok || period != 2 {
			t.Errorf("%s: readinessProbe %v, want upstream's httpGet every 2 s", c, probe)
		}
	}
}
