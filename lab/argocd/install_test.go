package argocd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/straitnet/strait/lab/manifest"
)

// pinned is the release test/argocdbin pins, from the module cache (make verify's tidy of
// that module has downloaded it).
func pinned(t *testing.T) Release {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := Locate(ctx, filepath.Join("..", "..", "test", "argocdbin"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTheInstallRunsOnlyImagesBuiltHere(t *testing.T) {
	r := pinned(t)
	objs, err := r.Objects()
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, o := range objs {
		kept[o.GetKind()+"/"+o.GetName()] = true
		if clusterScoped(o.GetKind()) != (o.GetNamespace() == "") || (o.GetNamespace() != "" && o.GetNamespace() != Namespace) {
			t.Errorf("%s %s: namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
		}
		for _, c := range containers(t, o) {
			image, _ := c["image"].(string)
			if image != r.Image() && image != r.RedisImage() {
				t.Errorf("%s %s container %v: image %s, want one the lab builds (%s, %s)", o.GetKind(), o.GetName(), c["name"], image, r.Image(), r.RedisImage())
			}
			if c["imagePullPolicy"] != "IfNotPresent" {
				t.Errorf("%s %s container %v: imagePullPolicy %v, want IfNotPresent (nothing to pull from)", o.GetKind(), o.GetName(), c["name"], c["imagePullPolicy"])
			}
			if probe, ok := c["readinessProbe"].(map[string]any); ok && probe["periodSeconds"] != int64(ReadinessPeriod) {
				t.Errorf("%s %s container %v: readiness probe every %v s, want %d", o.GetKind(), o.GetName(), c["name"], probe["periodSeconds"], ReadinessPeriod)
			}
		}
		if leftOut(o.GetName()) {
			t.Errorf("%s %s: a component the lab leaves out", o.GetKind(), o.GetName())
		}
	}
	for _, want := range []string{
		"StatefulSet/argocd-application-controller", "Deployment/argocd-repo-server", "Deployment/argocd-server",
		"Deployment/argocd-redis", "CustomResourceDefinition/applications.argoproj.io", "ConfigMap/argocd-cm",
		"Service/argocd-server", "Service/argocd-repo-server", "Service/argocd-redis",
	} {
		if !kept[want] {
			t.Errorf("the install lacks %s", want)
		}
	}
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "argocd-cmd-params-cm" {
			if v, _, _ := unstructured.NestedString(o.Object, "data", "server.insecure"); v != "true" {
				t.Errorf("argocd-cmd-params-cm server.insecure %q, want true (the git server's webhook is plain HTTP)", v)
			}
		}
	}
	data, err := manifest.Encode(objs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := manifest.Decode(data)
	if err != nil || len(back) != len(objs) {
		t.Fatalf("the manifest reads back as %d objects (%v), want %d", len(back), err, len(objs))
	}
}

func TestAnImageTheLabDoesNotBuildIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	install := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: argocd-server
spec:
  template:
    spec:
      containers:
      - name: argocd-server
        image: quay.io/argoproj/argocd:v3.6.1
      - name: sidecar
        image: docker.io/library/nginx:1
`
	if err := os.WriteFile(filepath.Join(dir, "manifests", "install.yaml"), []byte(install), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Release{Version: "v3.6.1", Source: dir}.Objects()
	if err == nil || !strings.Contains(err.Error(), "docker.io/library/nginx:1") || !strings.Contains(err.Error(), "sidecar") {
		t.Fatalf("an install with an image the lab does not build: %v, want the container and image named", err)
	}
}

func TestToolchainLine(t *testing.T) {
	for _, tc := range []struct{ gomod, want string }{
		{"module x\n\ngo 1.27.0\n\ntoolchain go1.27.3\n", "go1.27.3"},
		{"module x\n\ngo 1.26\n", ""},
	} {
		if got := toolchain([]byte(tc.gomod)); got != tc.want {
			t.Errorf("toolchain(%q) = %q, want %q", tc.gomod, got, tc.want)
		}
	}
}

func containers(t *testing.T, o *unstructured.Unstructured) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, field := range []string{"initContainers", "containers"} {
		cs, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", field)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			out = append(out, c.(map[string]any))
		}
	}
	return out
}

func TestTheHealthCheckIsMergedIntoArgocdCM(t *testing.T) {
	r := pinned(t)
	objs, err := r.Objects()
	if err != nil {
		t.Fatal(err)
	}
	cm, err := os.ReadFile(filepath.Join("..", "..", "examples", "clusterset", "argocd", "argocd-cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := WithSettings(objs, cm); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "argocd-cm" {
			v, _, _ := unstructured.NestedString(o.Object, "data", "resource.customizations.health.strait.io_ClusterSet")
			found = strings.Contains(v, "obj.status.observedGeneration")
		}
	}
	if !found {
		t.Error("argocd-cm lacks the ClusterSet's health check after WithSettings")
	}
	if err := WithResync(objs, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "argocd-cm" {
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			if data["timeout.reconciliation"] != "5s" || data["timeout.reconciliation.jitter"] != "0s" || data["resource.customizations.health.strait.io_ClusterSet"] == "" {
				t.Errorf("argocd-cm after WithResync(5s): %v, want timeout.reconciliation 5s, no jitter, the health check kept", data)
			}
		}
	}
	if err := WithSettings(objs, cm); err == nil || !strings.Contains(err.Error(), "resource.customizations.health.strait.io_ClusterSet") {
		t.Errorf("merging the same key twice: %v, want the key named", err)
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "clusterset", "argocd", "application.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	app, err := Sync{URL: "http://10.250.0.2:8080/clusterset.git", Branch: "main", Path: "clusterset", TargetNamespace: "strait-system"}.Application(example)
	if err != nil {
		t.Fatal(err)
	}
	if url, _, _ := unstructured.NestedString(app.Object, "spec", "source", "repoURL"); url != "http://10.250.0.2:8080/clusterset.git" {
		t.Errorf("the Application's repoURL %q, want the lab's", url)
	}
	if opts, _, _ := unstructured.NestedStringSlice(app.Object, "spec", "syncPolicy", "syncOptions"); len(opts) != 2 || opts[0] != "ServerSideApply=true" {
		t.Errorf("the Application's sync options %v, want the example's (ServerSideApply=true, CreateNamespace=true)", opts)
	}
	if _, err := (Sync{URL: "x"}).Application(example); err == nil {
		t.Error("an Application without branch, path or namespace was made")
	}
}
