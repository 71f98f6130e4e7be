package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
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
