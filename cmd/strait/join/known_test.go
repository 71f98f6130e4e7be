package join

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/clusters"
)

// join refuses, with exit 2 and before it writes anything, a cluster the hub's
// ClusterSet status records (by its kube-system UID) under another name: in the spec,
// or in status alone while the hub prunes it. The same name again passes the check. One
// API server plays the hub and the member.
func TestJoinRefusesAClusterTheHubHasUnderAnotherName(t *testing.T) {
	c := clusters.NewCluster(t)
	ctx := context.Background()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, c.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: straitv1.SystemNamespace}}); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		t.Fatal(err)
	}
	uid := string(ns.UID)
	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: straitv1.SystemNamespace},
		Spec: straitv1.ClusterSetSpec{Clusters: []straitv1.ClusterSpec{{Name: "c1",
			PodCIDRs: []string{"10.8.0.0/16"}, ServiceCIDRs: []string{"10.88.0.0/16"}}}}}
	if err := c.Client.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	cs.Status.Clusters = []straitv1.ClusterStatus{{Name: "c1", KubeSystemUID: uid}}
	if err := c.Client.Status().Update(ctx, cs); err != nil {
		t.Fatal(err)
	}
	join := func(name string) (string, int) {
		_, errOut, code := strait(t, "join", name, "--kubeconfig", kc, "--hub-kubeconfig", kc)
		return errOut, code
	}

	errOut, code := join("c3")
	for _, want := range []string{"already a member as c1", "ClusterSet strait-system/demo", "status.clusters[c1].kubeSystemUID is " + uid,
		"strait join c1 --rotate", "strait unjoin c1"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("join c3: %q does not say %q", errOut, want)
		}
	}
	if code != exitRefused {
		t.Errorf("join c3: exit %d, want %d", code, exitRefused)
	}
	for _, name := range []string{"c3-kubeconfig", HubAccessToken} {
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: name}, &corev1.Secret{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("join c3 was refused, yet Secret %s: %v", name, err)
		}
	}

	// The same name is a rejoin: past the check, join stops where Strait is missing.
	if errOut, code := join("c1"); code != 1 || !strings.Contains(errOut, "Strait is not installed there") {
		t.Errorf("join c1: exit %d, %q; want 1 and the missing ServiceAccount", code, errOut)
	}

	// c1 has left the spec; the hub still prunes it.
	cs.Spec.Clusters[0].Name = "c2"
	if err := c.Client.Update(ctx, cs); err != nil {
		t.Fatal(err)
	}
	errOut, code = join("c3")
	if code != exitRefused || !strings.Contains(errOut, "left ClusterSet strait-system/demo as c1") || !strings.Contains(errOut, "wait until it is pruned") {
		t.Errorf("join c3 while c1 is pruned: exit %d, %q", code, errOut)
	}
}
