package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

func globalCIDR(g Gomega, c client.Client) string {
	ms := &straitv1.Membership{}
	g.Expect(c.Get(context.Background(), types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, ms)).To(Succeed())
	g.Expect(ms.Spec.Globalnet).NotTo(BeNil())
	return ms.Spec.Globalnet.GlobalCIDR
}

// Deleting the hub's ClusterSet status (as a rebuilt hub has none) renumbers no globalnet
// allocation: the hub reads what members hold. A cluster added at the same time, which
// sorts first and would take the first block on a fresh allocation, gets a free block.
func TestRebuiltHubRenumbersNothing(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	cs := f.newClusterSet(t, "c2", "c3")
	cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true}
	f.create(t, cs)
	f.waitReady(t, cs)
	before := map[string]string{}
	for _, n := range []string{"c2", "c3"} {
		before[n] = globalCIDR(g, f.env.Member(n).Client)
	}
	g.Expect(before["c2"]).To(Equal("242.0.0.0/16"))

	cur := f.get(g, cs)
	cur.Status = straitv1.ClusterSetStatus{}
	g.Expect(f.env.Hub.Client.Status().Update(ctx, cur)).To(Succeed())
	f.update(t, cs, func(c *straitv1.ClusterSet) {
		c1 := f.newClusterSet(t, "c1").Spec.Clusters[0]
		c.Spec.Clusters = append([]straitv1.ClusterSpec{c1}, c.Spec.Clusters...)
	})
	f.waitReady(t, cs)
	for _, n := range []string{"c2", "c3"} {
		g.Expect(globalCIDR(g, f.env.Member(n).Client)).To(Equal(before[n]), "cluster %s", n)
	}
	c1 := globalCIDR(g, f.env.Member("c1").Client)
	g.Expect(c1).NotTo(BeElementOf(before["c2"], before["c3"]))
}
