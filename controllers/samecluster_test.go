package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/clusters"
)

// A second entry for a cluster already in the set, through another kubeconfig Secret,
// is found when the hub connects (the same kube-system UID): the ClusterSet goes
// Stalled naming both entries and the UID, and every member keeps what it held, the
// cluster named twice and the third one alike. Taking the second entry out un-stalls
// it without pruning the first entry's objects through the second's connection.
func TestOneClusterUnderTwoNamesStalls(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	c1, c3 := f.env.Member("c1"), f.env.Member("c3")

	cs := f.readyClusterSet(t, "c1", "c3")
	uid := kubeSystemUID(g, c1)
	g.Eventually(func(g Gomega) {
		for _, c := range f.get(g, cs).Status.Clusters {
			if c.Name == "c1" {
				g.Expect(c.KubeSystemUID).To(Equal(uid))
			}
		}
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	before := map[string]map[string]string{"c1": heldObjects(g, c1), "c3": heldObjects(g, c3)}
	g.Expect(before["c1"]).NotTo(BeEmpty())

	// c1's kubeconfig again, in a Secret of another name: the validator cannot tell.
	again := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "c1-again-kubeconfig", Namespace: f.hubNS},
		Data: map[string][]byte{clusters.KubeConfigKey: c1.KubeConfig}}
	g.Expect(f.env.Hub.Client.Create(ctx, again)).To(Succeed())
	t.Cleanup(func() { _ = client.IgnoreNotFound(f.env.Hub.Client.Delete(ctx, again)) })
	f.update(t, cs, func(c *straitv1.ClusterSet) {
		c.Spec.Clusters = append(c.Spec.Clusters, straitv1.ClusterSpec{Name: "c2",
			KubeConfig:   &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: again.Name}},
			PodCIDRs:     []string{"10.2.0.0/16"},
			ServiceCIDRs: []string{"10.102.0.0/16"}})
	})

	g.Eventually(func(g Gomega) {
		cur := f.get(g, cs)
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		stalled := apimeta.FindStatusCondition(cur.Status.Conditions, meta.StalledCondition)
		g.Expect(stalled).NotTo(BeNil())
		g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(stalled.Reason).To(Equal(straitv1.ReasonValidationFailed))
		g.Expect(stalled.Message).To(And(
			ContainSubstring("spec.clusters[2].kubeConfig"),
			ContainSubstring("spec.clusters[0] (c1, Secret c1-kubeconfig key value)"),
			ContainSubstring("spec.clusters[2] (c2, Secret c1-again-kubeconfig key value)"),
			ContainSubstring("UID "+uid)))
		g.Expect(apimeta.IsStatusConditionFalse(cur.Status.Conditions, meta.ReadyCondition)).To(BeTrue())
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	// Nothing is written while it holds: c1 and c3 keep their objects as they were
	// (c3 learns of no peer c2), and c2's own API server, never named, stays empty.
	g.Consistently(func(g Gomega) {
		g.Expect(heldObjects(g, c1)).To(Equal(before["c1"]))
		g.Expect(heldObjects(g, c3)).To(Equal(before["c3"]))
		g.Expect(heldObjects(g, f.env.Member("c2"))).To(BeEmpty())
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	// Taking the second entry out un-stalls it; c1's objects are the same objects, not
	// pruned through c2's connection and made again.
	f.update(t, cs, func(c *straitv1.ClusterSet) { c.Spec.Clusters = c.Spec.Clusters[:2] })
	cur := f.waitReady(t, cs)
	g.Expect(apimeta.FindStatusCondition(cur.Status.Conditions, meta.StalledCondition)).To(BeNil())
	g.Consistently(func(g Gomega) {
		after := heldObjects(g, c1)
		g.Expect(after).To(HaveLen(len(before["c1"])))
		for k, v := range before["c1"] {
			g.Expect(after).To(HaveKey(k))
			g.Expect(uidOf(after[k])).To(Equal(uidOf(v)), "%s was deleted and made again", k)
		}
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
}

// kubeSystemUID is the UID of a cluster's kube-system namespace.
func kubeSystemUID(g Gomega, c *clusters.Cluster) string {
	ns := &corev1.Namespace{}
	g.Expect(c.Client.Get(context.Background(), client.ObjectKey{Name: metav1.NamespaceSystem}, ns)).To(Succeed())
	return string(ns.UID)
}

// heldObjects maps "Kind namespace/name" of every object the hub wrote in a member to
// "UID resourceVersion".
func heldObjects(g Gomega, c *clusters.Cluster) map[string]string {
	out := map[string]string{}
	for _, l := range []client.ObjectList{&straitv1.MembershipList{}, &straitv1.PeerList{}, &straitv1.GlobalIngressList{},
		&corev1.SecretList{}, &corev1.ServiceList{}} {
		g.Expect(c.Client.List(context.Background(), l, client.HasLabels{straitv1.LabelManagedBy, straitv1.LabelClusterSet})).To(Succeed())
		items, err := apimeta.ExtractList(l)
		g.Expect(err).NotTo(HaveOccurred())
		for _, it := range items {
			o := it.(client.Object)
			version := o.GetResourceVersion()
			if m, ok := o.(*straitv1.Membership); ok {
				// The member's daemons write its status (strait dns its report of the
				// hub's objects): what the hub writes is its spec and metadata.
				version = fmt.Sprintf("generation %d labels %v annotations %v", m.Generation, m.Labels, m.Annotations)
			}
			out[fmt.Sprintf("%T %s/%s", o, o.GetNamespace(), o.GetName())] = string(o.GetUID()) + " " + version
		}
	}
	return out
}

func uidOf(held string) string {
	for i := range held {
		if held[i] == ' ' {
			return held[:i]
		}
	}
	return held
}
