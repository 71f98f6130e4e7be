package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/straitnet/strait/test/clusters"
)

// serveService creates, in a member, a namespace, a ClusterIP service and the
// EndpointSlice Kubernetes would make for it (envtest runs no controllers), and removes
// them when the test ends.
func serveService(t *testing.T, m *clusters.Cluster, ns, name, clusterIP string, podIPs ...string) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := m.Client.Create(ctx, nsObj); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			ClusterIP: clusterIP,
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	g.Expect(m.Client.Create(ctx, svc)).To(Succeed())
	ready := true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-abcde", Namespace: ns,
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, ip := range podIPs {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	g.Expect(m.Client.Create(ctx, slice)).To(Succeed())
	t.Cleanup(func() {
		_ = client.IgnoreNotFound(m.Client.Delete(ctx, slice))
		_ = client.IgnoreNotFound(m.Client.Delete(ctx, svc))
	})
}
