package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// slicesOf lists "<source-cluster>=<addresses>" of the MCS EndpointSlices of a service.
func slicesOf(g Gomega, c client.Client, ns, name string) map[string][]string {
	var list discoveryv1.EndpointSliceList
	g.Expect(c.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{mcsv1.LabelServiceName: name})).To(Succeed())
	out := map[string][]string{}
	for _, s := range list.Items {
		var addrs []string
		for _, ep := range s.Endpoints {
			addrs = append(addrs, ep.Addresses...)
		}
		out[s.Labels[mcsv1.LabelSourceCluster]] = addrs
	}
	return out
}

// An export becomes a ServiceImport and one EndpointSlice per exporting cluster in every
// member; removing it prunes them; removing a cluster prunes everything of it, in that
// member and in the others.
func TestExportImportAndPrune(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	serveService(t, f.env.Member("c1"), "shop", "cart", "10.0.0.11", "10.1.0.5", "10.1.0.6")
	serveService(t, f.env.Member("c3"), "shop", "cart", "10.0.0.13", "10.3.0.5")

	cs := f.newClusterSet(t, "c1", "c2", "c3")
	f.create(t, cs)
	f.waitReady(t, cs)
	f.update(t, cs, func(c *straitv1.ClusterSet) {
		c.Spec.Exports = []straitv1.ExportSpec{{Namespace: "shop", Name: "cart"}}
	})

	for _, m := range f.env.Members {
		g.Eventually(func(g Gomega) {
			si := &mcsv1.ServiceImport{}
			g.Expect(m.Client.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "cart"}, si)).To(Succeed())
			g.Expect(si.Spec.Type).To(Equal(mcsv1.ClusterSetIP))
			g.Expect(si.Spec.Ports).To(ConsistOf(HaveField("Port", int32(80))))
			g.Expect(si.Status.Clusters).To(ConsistOf(
				mcsv1.ClusterStatus{Cluster: "c1"}, mcsv1.ClusterStatus{Cluster: "c3"}))
			g.Expect(slicesOf(g, m.Client, "shop", "cart")).To(Equal(map[string][]string{
				"c1": {"10.0.0.11"}, "c3": {"10.0.0.13"}}))
		}, 15*time.Second, 100*time.Millisecond).Should(Succeed(), "member %s", m.Name)
	}
	// c1's ServiceExport says it is valid and exported.
	g.Eventually(func(g Gomega) {
		se := &mcsv1.ServiceExport{}
		g.Expect(f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "cart"}, se)).To(Succeed())
		valid := apimeta.FindStatusCondition(se.Status.Conditions, string(mcsv1.ServiceExportConditionValid))
		g.Expect(valid).NotTo(BeNil())
		g.Expect(valid.Status).To(Equal(metav1.ConditionTrue))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	cur := f.waitReady(t, cs)
	g.Expect(cur.Status.Exports).To(ConsistOf(HaveField("Clusters", ConsistOf("c1", "c3"))))

	// A new pod behind c1's service does not change a ClusterSetIP slice, but a changed
	// cluster IP would: the imports follow the member's service.

	// Removing c3 from the ClusterSet prunes all of c3's objects in c3, and c3's slice
	// everywhere else.
	f.update(t, cs, func(c *straitv1.ClusterSet) { c.Spec.Clusters = c.Spec.Clusters[:2] })
	g.Eventually(func(g Gomega) {
		objs, err := hubObjects(ctx, f.env.Member("c3").Client)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(objs).To(BeEmpty())
		for _, n := range []string{"c1", "c2"} {
			g.Expect(slicesOf(g, f.env.Member(n).Client, "shop", "cart")).To(Equal(map[string][]string{"c1": {"10.0.0.11"}}))
		}
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())
	// The removed cluster is gone from status once cleaned.
	g.Eventually(func(g Gomega) {
		cur := f.get(g, cs)
		g.Expect(ready(cur)).To(BeTrue())
		g.Expect(cur.Status.Clusters).To(HaveLen(2))
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())

	// Removing the export prunes the import and its slices; the namespace stays.
	f.update(t, cs, func(c *straitv1.ClusterSet) { c.Spec.Exports = nil })
	for _, n := range []string{"c1", "c2"} {
		m := f.env.Member(n)
		g.Eventually(func(g Gomega) {
			var sis mcsv1.ServiceImportList
			g.Expect(m.Client.List(ctx, &sis, client.InNamespace("shop"))).To(Succeed())
			g.Expect(sis.Items).To(BeEmpty())
			g.Expect(slicesOf(g, m.Client, "shop", "cart")).To(BeEmpty())
			var ses mcsv1.ServiceExportList
			g.Expect(m.Client.List(ctx, &ses, client.InNamespace("shop"))).To(Succeed())
			g.Expect(ses.Items).To(BeEmpty())
		}, 15*time.Second, 100*time.Millisecond).Should(Succeed(), "member %s", n)
		g.Expect(m.Client.Get(ctx, types.NamespacedName{Name: "shop"}, &corev1.Namespace{})).To(Succeed())
	}
}

// An endpoint change in a member re-plans the other members' imports within a second or
// so (watches, not the periodic interval).
func TestHeadlessEndpointChangeIsWatched(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	c2 := f.env.Member("c2")
	serveService(t, c2, "db", "pg", "None", "10.2.0.7")

	cs := f.newClusterSet(t, "c1", "c2")
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "db", Name: "pg", Clusters: []string{"c2"}}}
	f.create(t, cs)
	g.Eventually(func(g Gomega) {
		g.Expect(slicesOf(g, f.env.Member("c1").Client, "db", "pg")).To(Equal(map[string][]string{"c2": {"10.2.0.7"}}))
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())

	slice := &discoveryv1.EndpointSlice{}
	g.Expect(c2.Client.Get(ctx, types.NamespacedName{Namespace: "db", Name: "pg-abcde"}, slice)).To(Succeed())
	slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.2.0.8"},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}})
	g.Expect(c2.Client.Update(ctx, slice)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(slicesOf(g, f.env.Member("c1").Client, "db", "pg")).To(Equal(map[string][]string{"c2": {"10.2.0.7", "10.2.0.8"}}))
	}, 5*time.Second, 50*time.Millisecond).Should(Succeed())
}
