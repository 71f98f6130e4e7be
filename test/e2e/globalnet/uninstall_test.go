package globalnet

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/argocd"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// TestStraitUninstallSuspendsArgoCDFirst: strait uninstall finds the ClusterSet applied
// by the Argo CD Application (its tracking annotation) and refuses without
// --suspend-gitops (exit 2, naming the Application); with it, it turns the Application's
// automated sync off first, says so, and removes Strait from the members and the hub
// without Argo CD putting the ClusterSet back; nothing of the install is left. It runs
// last (this file): the lab goes down after it.
func TestStraitUninstallSuspendsArgoCDFirst(t *testing.T) {
	env.Require(t)
	cs := env.ClusterSet(t)
	if id := cs.Annotations["argocd.argoproj.io/tracking-id"]; !strings.HasPrefix(id, argocd.AppName+":") {
		t.Fatalf("the lab's ClusterSet carries no tracking id of Argo CD's Application %s: %v", argocd.AppName, cs.Annotations)
	}
	var args []string
	for _, c := range []string{topology.HubName, "g1", "g2"} {
		args = append(args, "--member-kubeconfig", c+"="+env.Lab.State().KubeconfigPath(c))
	}
	app := "Argo CD Application " + argocd.Namespace + "/" + argocd.AppName
	out, errOut, code := labtest.Run(t, time.Minute, env.Strait, append([]string{"uninstall"}, args...)...)
	t.Logf("strait uninstall: exit %d\n%s%s", code, out, errOut)
	if code != 2 || !strings.Contains(errOut, "is applied by "+app) || !strings.Contains(errOut, "--suspend-gitops") {
		t.Errorf("strait uninstall under Argo CD: exit %d; want 2 and a message naming %s and --suspend-gitops", code, app)
	}
	_ = env.ClusterSet(t) // fails the test when the refused uninstall deleted it

	start := time.Now()
	out, errOut, code = labtest.Run(t, 8*time.Minute, env.Strait, append([]string{"uninstall", "--suspend-gitops"}, args...)...)
	t.Logf("strait uninstall --suspend-gitops: exit %d in %s\n%s%s", code, time.Since(start).Round(time.Second), out, errOut)
	if code != 0 {
		t.Fatalf("strait uninstall --suspend-gitops: exit %d", code)
	}
	for _, s := range []string{"suspended " + app, "removed hub: ClusterSet " + cs.Namespace + "/" + cs.Name,
		"removed g1: DaemonSet strait-system/strait-agent", "removed hub: namespace strait-system"} {
		if !strings.Contains(out, s) {
			t.Errorf("the report does not say %q", s)
		}
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"})
	if err := env.Client(t, topology.HubName).Get(context.Background(), client.ObjectKey{Namespace: argocd.Namespace, Name: argocd.AppName}, u); err != nil {
		t.Fatal(err)
	}
	if auto, ok, _ := unstructured.NestedMap(u.Object, "spec", "syncPolicy", "automated"); ok {
		t.Errorf("application/%s still syncs automatically after the uninstall: %v", argocd.AppName, auto)
	}
	list := &straitv1.ClusterSetList{}
	if err := env.Client(t, topology.HubName).List(context.Background(), list); err == nil && len(list.Items) > 0 {
		t.Errorf("Argo CD put the ClusterSet back: %d in the hub", len(list.Items))
	}
	env.CheckNothingLeft(t)
}
