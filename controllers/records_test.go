package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/plan"
)

// clusterSetMembers lists a ClusterSet's ClusterSetMembers by cluster.
func (f *fixture) clusterSetMembers(g Gomega, cs *straitv1.ClusterSet) map[string]straitv1.ClusterSetMember {
	var list straitv1.ClusterSetMemberList
	g.Expect(f.env.Hub.Client.List(context.Background(), &list, client.InNamespace(cs.Namespace),
		client.MatchingLabels{straitv1.LabelClusterSet: cs.Namespace + "." + cs.Name})).To(Succeed())
	out := map[string]straitv1.ClusterSetMember{}
	for _, m := range list.Items {
		out[m.Spec.Cluster] = m
	}
	return out
}

// Every member has a ClusterSetMember in the hub, owned by the ClusterSet, holding what
// status.clusters holds for it; one deleted by someone is written again, a member taken
// out of the spec loses its own once it is clean, and none is left after the ClusterSet.
func TestEveryMemberHasAClusterSetMember(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	cs := f.readyClusterSet(t, "c1", "c2", "c3")

	var cur *straitv1.ClusterSet
	g.Eventually(func(g Gomega) {
		cur = f.get(g, cs)
		ms := f.clusterSetMembers(g, cur)
		g.Expect(ms).To(HaveLen(3))
		for _, st := range cur.Status.Clusters {
			m, ok := ms[st.Name]
			g.Expect(ok).To(BeTrue(), "no ClusterSetMember for %s", st.Name)
			g.Expect(m.Name).To(Equal(cs.Name + "." + st.Name))
			g.Expect(m.Spec.ClusterSet).To(Equal(cs.Name))
			g.Expect(metav1.IsControlledBy(&m, cur)).To(BeTrue(), "owners: %+v", m.OwnerReferences)
			g.Expect(m.Status).To(Equal(st))
			g.Expect(apimeta.IsStatusConditionTrue(m.Status.Conditions, straitv1.ConditionConnected)).To(BeTrue())
			g.Expect(m.Status.Inventory).To(HaveKeyWithValue("Peer", int32(2)))
		}
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())

	ctx := context.Background()
	gone := f.clusterSetMembers(g, cur)["c1"]
	g.Expect(f.env.Hub.Client.Delete(ctx, &gone)).To(Succeed())
	g.Eventually(func(g Gomega) {
		m, ok := f.clusterSetMembers(g, cur)["c1"]
		g.Expect(ok).To(BeTrue(), "c1's ClusterSetMember was not written again")
		g.Expect(m.UID).NotTo(Equal(gone.UID))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())

	f.update(t, cs, func(cs *straitv1.ClusterSet) { cs.Spec.Clusters = cs.Spec.Clusters[:2] })
	g.Eventually(func(g Gomega) {
		g.Expect(ready(f.get(g, cs))).To(BeTrue())
		g.Expect(f.clusterSetMembers(g, cs)).To(SatisfyAll(HaveLen(2), HaveKey("c1"), HaveKey("c2")))
	}, 20*time.Second, 100*time.Millisecond).Should(Succeed())

	f.remove(t, cs)
	g.Expect(f.clusterSetMembers(g, cs)).To(BeEmpty())
}

// A ClusterSet of more members than status.clusters lists (here 300 that the hub cannot
// reach: their kubeconfig Secrets do not exist) lists MaxStatusClusters of them, counts
// them all in the summary, and gives each its ClusterSetMember.
func TestAClusterSetOfThreeHundredMembers(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	const n = 300
	cs := f.newClusterSet(t)
	cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, ClusterSize: 16384}
	for i := range n {
		name := fmt.Sprintf("far%03d", i)
		cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{Name: name,
			KubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: name + "-kubeconfig"}},
			PodCIDRs:   []string{"10.0.0.0/16"}, ServiceCIDRs: []string{"10.1.0.0/16"}})
	}
	f.create(t, cs)
	g.Eventually(func(g Gomega) {
		cur := f.get(g, cs)
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		g.Expect(cur.Status.Summary.Clusters).To(Equal(fmt.Sprintf("0/%d", n)))
		g.Expect(cur.Status.Clusters).To(HaveLen(plan.MaxStatusClusters))
		ms := f.clusterSetMembers(g, cur)
		g.Expect(ms).To(HaveLen(n))
		connected := apimeta.FindStatusCondition(ms["far299"].Status.Conditions, straitv1.ConditionConnected)
		g.Expect(connected).NotTo(BeNil())
		g.Expect(connected.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(connected.Message).To(ContainSubstring("far299-kubeconfig"))
		ready := apimeta.FindStatusCondition(cur.Status.Conditions, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Message).To(ContainSubstring("far299"))
		// What the API server tracks of who wrote the status does not grow with the
		// members it lists (status.clusters is one atomic field): with a field per
		// cluster it was 177 KB at 255 members, and every write of the status paid for it.
		var tracked int
		for _, mf := range cur.ManagedFields {
			if mf.Subresource == "status" && mf.FieldsV1 != nil {
				tracked += len(mf.FieldsV1.GetRawBytes())
			}
		}
		g.Expect(tracked).To(BeNumerically(">", 0))
		g.Expect(tracked).To(BeNumerically("<", 4096), "managed fields of the status")
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}
