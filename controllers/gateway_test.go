package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// A Gateway appearing in c2 shows up, within a second or so, as the endpoint of c1's
// Peer for c2, and as c2's active gateway in the ClusterSet status.
func TestGatewayBecomesPeerEndpoint(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	cs := f.readyClusterSet(t, "c1", "c2")

	peer := &straitv1.Peer{}
	g.Expect(f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "c2"}, peer)).To(Succeed())
	g.Expect(peer.Spec.Endpoint).To(BeNil())

	gw := &straitv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: straitv1.SystemNamespace},
		Spec: straitv1.GatewaySpec{NodeName: "node-a", HAState: straitv1.HAActive, IP: "192.0.2.20", Port: 51871,
			PublicKey: "dGVzdC1wdWJsaWMta2V5LTAxMjM0NTY3ODlhYmNkZWY=", Driver: straitv1.CableWireGuard},
	}
	c2 := f.env.Member("c2").Client
	g.Expect(c2.Create(ctx, gw)).To(Succeed())
	t.Cleanup(func() { _ = c2.Delete(ctx, gw) })

	g.Eventually(func(g Gomega) {
		g.Expect(f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "c2"}, peer)).To(Succeed())
		g.Expect(peer.Spec.Endpoint).NotTo(BeNil())
		g.Expect(peer.Spec.Endpoint.IP).To(Equal("192.0.2.20"))
		g.Expect(peer.Spec.Endpoint.Port).To(Equal(int32(51871)))
		g.Expect(peer.Spec.Endpoint.Gateway).To(Equal("node-a"))
	}, 5*time.Second, 50*time.Millisecond).Should(Succeed())

	g.Eventually(func(g Gomega) {
		cur := f.get(g, cs)
		for _, c := range cur.Status.Clusters {
			if c.Name != "c2" {
				continue
			}
			g.Expect(c.ActiveGateway).To(Equal("node-a"))
			gr := apimeta.FindStatusCondition(c.Conditions, straitv1.ConditionGatewayReady)
			g.Expect(gr).NotTo(BeNil())
			g.Expect(gr.Status).To(Equal(metav1.ConditionTrue))
		}
	}, 5*time.Second, 50*time.Millisecond).Should(Succeed())

	// The gateway going passive takes the endpoint away again.
	g.Expect(c2.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "node-a"}, gw)).To(Succeed())
	gw.Spec.HAState = straitv1.HAPassive
	g.Expect(c2.Update(ctx, gw)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "c2"}, peer)).To(Succeed())
		g.Expect(peer.Spec.Endpoint).To(BeNil())
	}, 5*time.Second, 50*time.Millisecond).Should(Succeed())
}

// c2's gateways are reached through a LoadBalancer Service, whose address a cloud writes
// some time after the ClusterSet names it: c1's Peer for c2 has no endpoint until then,
// and the address within seconds of the status update, which must wake the hub by
// itself (nothing else changes).
func TestLoadBalancerAddressReachesThePeerWhenTheCloudWritesIt(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	c2 := f.env.Member("c2").Client
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "strait-gateway", Namespace: straitv1.SystemNamespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
			{Name: "cable", Protocol: corev1.ProtocolUDP, Port: 51871}}},
	}
	g.Expect(c2.Create(ctx, svc)).To(Succeed())
	t.Cleanup(func() { _ = c2.Delete(ctx, svc) })
	gw := &straitv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Namespace: straitv1.SystemNamespace},
		Spec: straitv1.GatewaySpec{NodeName: "node-a", HAState: straitv1.HAActive, Port: 51871,
			PublicKey: "dGVzdC1wdWJsaWMta2V5LTAxMjM0NTY3ODlhYmNkZWY=", Driver: straitv1.CableWireGuard},
	}
	g.Expect(c2.Create(ctx, gw)).To(Succeed())
	t.Cleanup(func() { _ = c2.Delete(ctx, gw) })

	cs := f.newClusterSet(t, "c1", "c2")
	cs.Spec.Clusters[1].Gateway.Endpoint = &straitv1.GatewayEndpoint{Type: straitv1.EndpointLoadBalancer,
		Service: &straitv1.ServiceReference{Namespace: straitv1.SystemNamespace, Name: "strait-gateway"}}
	f.create(t, cs)
	f.waitReady(t, cs)
	peer := &straitv1.Peer{}
	key := types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "c2"}
	g.Consistently(func(g Gomega) {
		g.Expect(f.env.Member("c1").Client.Get(ctx, key, peer)).To(Succeed())
		g.Expect(peer.Spec.Endpoint).To(BeNil())
	}, time.Second, 100*time.Millisecond).Should(Succeed())

	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
	g.Expect(c2.Status().Update(ctx, svc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(f.env.Member("c1").Client.Get(ctx, key, peer)).To(Succeed())
		g.Expect(peer.Spec.Endpoint).NotTo(BeNil())
		g.Expect(peer.Spec.Endpoint.IP).To(Equal("203.0.113.7"))
		g.Expect(peer.Spec.Endpoint.Gateway).To(Equal("node-a"))
	}, 5*time.Second, 50*time.Millisecond).Should(Succeed())
}
