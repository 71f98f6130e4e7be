package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/plan"
)

// Which member changes wake a ClusterSet: a fast table beside the envtest tests that
// show the wake-ups end to end.
func TestRelevantChange(t *testing.T) {
	cs := types.NamespacedName{Namespace: "strait-system", Name: "prod"}
	key := members.Key{ClusterSet: cs, Cluster: "c1"}
	r := &ClusterSetReconciler{}
	r.relevanceFor(cs).update(&straitv1.ClusterSet{Spec: straitv1.ClusterSetSpec{
		Exports: []straitv1.ExportSpec{{Namespace: "shop", Name: "cart"}},
		Clusters: []straitv1.ClusterSpec{{Name: "c2", Gateway: straitv1.GatewaySelection{Endpoint: &straitv1.GatewayEndpoint{
			Type: straitv1.EndpointLoadBalancer, Service: &straitv1.ServiceReference{Namespace: "strait-system", Name: "strait-gateway"}}}}}}}, plan.Observed{})
	ours := map[string]string{straitv1.LabelManagedBy: straitv1.ManagedByHub, straitv1.LabelClusterSet: plan.ClusterSetLabel(cs)}
	peer := &straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Namespace: "strait-system", Name: "c2", Labels: ours, ResourceVersion: "7"}}
	peer.Generation = 2
	r.appliedFor(key).set(keyOf("Peer", peer), entryOf("Peer", peer, "7", 0))
	statusWritten := peer.DeepCopy()
	statusWritten.ResourceVersion = "8"
	specChanged := statusWritten.DeepCopy()
	specChanged.Generation = 3
	relabelled := statusWritten.DeepCopy()
	relabelled.Labels = map[string]string{straitv1.LabelManagedBy: straitv1.ManagedByHub, straitv1.LabelClusterSet: plan.ClusterSetLabel(cs), "x": "y"}

	meta := func(ns, name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, ResourceVersion: "9"}
	}
	for _, tc := range []struct {
		name    string
		obj     client.Object
		deleted bool
		want    bool
	}{
		{"exported service", &corev1.Service{ObjectMeta: meta("shop", "cart", nil)}, false, true},
		{"other service", &corev1.Service{ObjectMeta: meta("shop", "other", nil)}, false, false},
		{"the gateways' LoadBalancer service", &corev1.Service{ObjectMeta: meta("strait-system", "strait-gateway", nil)}, false, true},
		{"slice of the exported service", &discoveryv1.EndpointSlice{ObjectMeta: meta("shop", "cart-x",
			map[string]string{discoveryv1.LabelServiceName: "cart"})}, false, true},
		{"slice of another service", &discoveryv1.EndpointSlice{ObjectMeta: meta("shop", "db-x",
			map[string]string{discoveryv1.LabelServiceName: "db"})}, false, false},
		{"an MCS slice of another clusterset", &discoveryv1.EndpointSlice{ObjectMeta: meta("shop", "cart-c2",
			map[string]string{discoveryv1.LabelManagedBy: plan.EndpointSliceManagedBy, discoveryv1.LabelServiceName: "cart"})}, false, false},
		{"gateway", &straitv1.Gateway{ObjectMeta: meta("strait-system", "node-a", nil)}, false, true},
		{"a person's export under Declared", &mcsv1.ServiceExport{ObjectMeta: meta("ops", "grafana", nil)}, false, false},
		{"the echo of the hub's own write", peer, false, false},
		{"the hub's object changed by someone", &straitv1.Peer{ObjectMeta: meta("strait-system", "c2", ours)}, false, true},
		{"a Peer's status written by its agent", statusWritten, false, false},
		{"a Peer's spec changed by someone", specChanged, false, true},
		{"a Peer's labels changed by someone", relabelled, false, true},
		{"the hub's object deleted by someone", peer, true, true},
		{"the echo of the hub's own prune", &straitv1.Peer{ObjectMeta: meta("strait-system", "c3", ours)}, true, false},
	} {
		if got := r.relevantChange(key, tc.obj, tc.deleted); got != tc.want {
			t.Errorf("%s: relevant = %v, want %v", tc.name, got, tc.want)
		}
	}
}
