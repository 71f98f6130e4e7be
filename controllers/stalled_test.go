package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Applied with no webhook, an invalid ClusterSet (two clusters with the same pod CIDR,
// no globalnet) goes Stalled with the validator's message, and no member object changes.
func TestInvalidClusterSetStalls(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	cs := f.newClusterSet(t, "c1", "c2")
	cs.Spec.Clusters[1].PodCIDRs = cs.Spec.Clusters[0].PodCIDRs
	f.create(t, cs)

	g.Eventually(func(g Gomega) {
		cur := f.get(g, cs)
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		stalled := apimeta.FindStatusCondition(cur.Status.Conditions, meta.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(stalled.Reason).To(Equal(straitv1.ReasonValidationFailed))
		g.Expect(stalled.Message).To(And(ContainSubstring("spec.clusters[1].podCIDRs"), ContainSubstring("10.1.0.0/16"), ContainSubstring("c1")))
		ready := apimeta.FindStatusCondition(cur.Status.Conditions, meta.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(apimeta.FindStatusCondition(cur.Status.Conditions, meta.ReconcilingCondition)).To(BeNil())
		g.Expect(f.gauge(g, "strait_hub_clusterset_stalled", cs)).To(Equal(1.0))
		g.Expect(f.gauge(g, "strait_hub_clusterset_generation", cs)).To(Equal(float64(cur.Generation)))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())

	g.Consistently(func(g Gomega) {
		for _, m := range f.env.Members {
			objs, err := hubObjects(ctx, m.Client)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(objs).To(BeEmpty(), "member %s", m.Name)
		}
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	// Fixing the spec un-stalls it.
	f.update(t, cs, func(c *straitv1.ClusterSet) { c.Spec.Clusters[1].PodCIDRs = []string{"10.2.0.0/16"} })
	cur := f.waitReady(t, cs)
	g.Expect(apimeta.FindStatusCondition(cur.Status.Conditions, meta.StalledCondition)).To(BeNil())
	g.Expect(f.gauge(g, "strait_hub_clusterset_stalled", cs)).To(Equal(0.0))
	g.Expect(f.gauge(g, "strait_hub_member_applied_generation", cs, "c2")).To(Equal(float64(cur.Generation)))
}
