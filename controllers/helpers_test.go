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

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
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

// gauge reads a hub series of cs (a gauge or a counter) as a scrape would: the family name's series whose
// clusterset label is cs's and, when member is given, whose member label is it. It
// fails g when there is none.
func (f *fixture) gauge(g Gomega, name string, cs *straitv1.ClusterSet, member ...string) float64 {
	families, err := f.metrics.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	want := map[string]string{"clusterset": cs.Namespace + "." + cs.Name}
	if len(member) > 0 {
		want["member"] = member[0]
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
	series:
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	g.Expect(name).To(BeEmpty(), "no series %s%v", name, want)
	return 0
}
