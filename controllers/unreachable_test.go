package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// A stopped member API server turns that cluster's Connected condition False (with an
// event) while the other members still converge; when it comes back it converges too.
func TestUnreachableMemberDoesNotStopTheOthers(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	serveService(t, f.env.Member("c1"), "web", "front", "10.0.0.21", "10.1.0.21")

	cs := f.newClusterSet(t, "c1", "c2", "c3")
	f.create(t, cs)
	f.waitReady(t, cs)

	c2 := f.env.Member("c2")
	start0 := time.Now()
	g.Expect(c2.StopAPIServer()).To(Succeed())
	t.Cleanup(func() { _ = c2.StartAPIServer() })

	g.Eventually(func(g Gomega) {
		cur := f.get(g, cs)
		ready := apimeta.FindStatusCondition(cur.Status.Conditions, meta.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(straitv1.ReasonMembersUnreachable))
		g.Expect(ready.Message).To(ContainSubstring("c2"))
		g.Expect(apimeta.IsStatusConditionTrue(cur.Status.Conditions, meta.ReconcilingCondition)).To(BeTrue())
		g.Expect(apimeta.FindStatusCondition(cur.Status.Conditions, meta.StalledCondition)).To(BeNil())
		for _, c := range cur.Status.Clusters {
			conn := apimeta.FindStatusCondition(c.Conditions, straitv1.ConditionConnected)
			if c.Name == "c2" {
				g.Expect(conn.Status).To(Equal(metav1.ConditionFalse))
			} else {
				g.Expect(conn.Status).To(Equal(metav1.ConditionTrue))
			}
		}
		g.Expect(cur.Status.Summary.Clusters).To(Equal("2/3"))
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(f.events(g, cs)).To(ContainElement(And(ContainSubstring(straitv1.ReasonUnreachable), ContainSubstring("c2"))))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())

	// A change while c2 is away reaches c1 and c3.
	f.update(t, cs, func(c *straitv1.ClusterSet) {
		c.Spec.Exports = []straitv1.ExportSpec{{Namespace: "web", Name: "front", Clusters: []string{"c1"}}}
	})
	for _, n := range []string{"c1", "c3"} {
		g.Eventually(func() error {
			return f.env.Member(n).Client.Get(ctx, types.NamespacedName{Namespace: "web", Name: "front"}, &mcsv1.ServiceImport{})
		}, 15*time.Second, 100*time.Millisecond).Should(Succeed(), "member %s", n)
	}
	// What the alerts read: c2 unreachable and a generation behind, the others current.
	g.Eventually(func(g Gomega) {
		gen := f.gauge(g, "strait_hub_clusterset_generation", cs)
		g.Expect(gen).To(Equal(float64(f.get(g, cs).Generation)))
		g.Expect(f.gauge(g, "strait_hub_member_connected", cs, "c2")).To(Equal(0.0))
		g.Expect(f.gauge(g, "strait_hub_member_applied_generation", cs, "c2")).To(BeNumerically("<", gen))
		for _, n := range []string{"c1", "c3"} {
			g.Expect(f.gauge(g, "strait_hub_member_connected", cs, n)).To(Equal(1.0), n)
			g.Expect(f.gauge(g, "strait_hub_member_applied_generation", cs, n)).To(Equal(gen), n)
		}
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())

	// c2 comes back and converges, without waiting for the ClusterSet's interval.
	g.Expect(c2.StartAPIServer()).To(Succeed())
	g.Eventually(func() error {
		return c2.Client.Get(ctx, types.NamespacedName{Namespace: "web", Name: "front"}, &mcsv1.ServiceImport{})
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())
	back := f.waitReady(t, cs)
	g.Eventually(func(g Gomega) {
		g.Expect(f.gauge(g, "strait_hub_member_connected", cs, "c2")).To(Equal(1.0))
		g.Expect(f.gauge(g, "strait_hub_member_applied_generation", cs, "c2")).To(Equal(float64(back.Generation)))
		g.Expect(f.gauge(g, "strait_hub_member_last_applied_timestamp_seconds", cs, "c2")).To(BeNumerically(">=", float64(start0.Unix())))
	}, 5*time.Second, 100*time.Millisecond).Should(Succeed())

	// What c2 gets after its outage is seen at once: the hub's informers of c2 were
	// built afresh when it answered again, instead of waiting out client-go's relist
	// backoff (which had grown to tens of seconds during the outage).
	serveService(t, c2, "web", "back", "10.0.0.22", "10.1.0.22")
	f.update(t, cs, func(c *straitv1.ClusterSet) {
		c.Spec.Exports = append(c.Spec.Exports, straitv1.ExportSpec{Namespace: "web", Name: "back", Clusters: []string{"c2"}})
	})
	start := time.Now()
	g.Eventually(func() error {
		return f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: "web", Name: "back"}, &mcsv1.ServiceImport{})
	}, 2*time.Second, 100*time.Millisecond).Should(Succeed(), "c1's import of a service c2 got after its outage")
	t.Logf("c2's new export imported in c1 %s after the change", time.Since(start).Round(time.Millisecond))
}
