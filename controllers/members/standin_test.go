package members

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A stand-in is listed from the start, answers the probe through its client and tells
// its kube-system UID, as a connection to an API server does once it is up.
func TestStandInAnswersAsAConnection(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	key := Key{ClusterSet: types.NamespacedName{Namespace: "ns", Name: "set"}, Cluster: "s1"}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem, UID: "uid-s1"}}).Build()
	m := NewStandIn(key, c, c, nil)
	if !m.Synced() {
		t.Error("a stand-in is not listed")
	}
	if err := m.Probe(ctx); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if h := m.Health(); !h.Connected || h.Since.IsZero() {
		t.Errorf("health after a good probe: %+v", h)
	}
	if uid, err := m.KubeSystemUID(ctx); err != nil || uid != "uid-s1" {
		t.Errorf("kube-system UID %q, %v; want uid-s1", uid, err)
	}
	if _, ok := m.Print("ServiceImport"); ok {
		t.Error("a stand-in without prints has a print")
	}
	m.stop() // what Cache.Forget would do: returns at once

	gone := NewStandIn(key, fake.NewClientBuilder().WithScheme(scheme).Build(), c, nil)
	if err := gone.Probe(ctx); err == nil || !strings.Contains(err.Error(), "stand-in ns/set/s1") {
		t.Errorf("probe of a stand-in without kube-system: %v", err)
	}
	if gone.Health().Connected {
		t.Error("a stand-in whose probe failed is connected")
	}
}
