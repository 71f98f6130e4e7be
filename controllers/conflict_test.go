package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// The same service exported as ClusterSetIP from c1 and headless from c2: the older
// export (c1's, written first) sets the type, c2 is left out of the import, and c2's
// ServiceExport says so with Conflict=True/TypeConflict; the ClusterSet's export status
// names the conflict.
func TestTypeConflictIsReported(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	serveService(t, f.env.Member("c1"), "pay", "api", "10.0.0.31", "10.1.0.31")
	serveService(t, f.env.Member("c2"), "pay", "api", "None", "10.2.0.31")

	cs := f.newClusterSet(t, "c1", "c2")
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "pay", Name: "api", Clusters: []string{"c1"}}}
	f.create(t, cs)
	f.waitReady(t, cs)
	// c2 exports later: its ServiceExport is younger.
	time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
	f.update(t, cs, func(c *straitv1.ClusterSet) { c.Spec.Exports[0].Clusters = nil })

	g.Eventually(func(g Gomega) {
		se := &mcsv1.ServiceExport{}
		g.Expect(f.env.Member("c2").Client.Get(ctx, types.NamespacedName{Namespace: "pay", Name: "api"}, se)).To(Succeed())
		conflict := apimeta.FindStatusCondition(se.Status.Conditions, string(mcsv1.ServiceExportConditionConflict))
		g.Expect(conflict).NotTo(BeNil())
		g.Expect(conflict.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(conflict.Reason).To(Equal(string(mcsv1.ServiceExportReasonTypeConflict)))
		g.Expect(conflict.Message).To(ContainSubstring("c1"))

		si := &mcsv1.ServiceImport{}
		g.Expect(f.env.Member("c2").Client.Get(ctx, types.NamespacedName{Namespace: "pay", Name: "api"}, si)).To(Succeed())
		g.Expect(si.Spec.Type).To(Equal(mcsv1.ClusterSetIP))
		g.Expect(si.Status.Clusters).To(ConsistOf(mcsv1.ClusterStatus{Cluster: "c1"}))

		cur := f.get(g, cs)
		g.Expect(cur.Status.Exports).To(ConsistOf(And(HaveField("Name", "api"), HaveField("Conflict", ContainSubstring("c2")))))
		g.Expect(cur.Status.Summary.Conflicts).To(Equal(int32(1)))
		g.Expect(f.gauge(g, "strait_hub_export_conflicts", cs)).To(Equal(1.0))
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())
}

// Under the MemberExports policy a ServiceExport that someone creates directly in a
// member is honoured: it becomes an import everywhere and gets its conditions; under
// Declared it is ignored.
func TestMemberCreatedExports(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	c3 := f.env.Member("c3")
	serveService(t, c3, "ops", "grafana", "10.0.0.41", "10.3.0.41")

	cs := f.newClusterSet(t, "c1", "c3")
	f.create(t, cs)
	f.waitReady(t, cs)
	se := &mcsv1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "grafana"}}
	g.Expect(c3.Client.Create(ctx, se)).To(Succeed())
	t.Cleanup(func() { _ = c3.Client.Delete(ctx, se) })

	g.Consistently(func() error {
		return f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: "ops", Name: "grafana"}, &mcsv1.ServiceImport{})
	}, 2*time.Second, 200*time.Millisecond).Should(MatchError(ContainSubstring("not found")))

	f.update(t, cs, func(c *straitv1.ClusterSet) { c.Spec.ExportPolicy = straitv1.ExportPolicyMemberExports })
	g.Eventually(func(g Gomega) {
		g.Expect(f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: "ops", Name: "grafana"}, &mcsv1.ServiceImport{})).To(Succeed())
		cur := &mcsv1.ServiceExport{}
		g.Expect(c3.Client.Get(ctx, client.ObjectKeyFromObject(se), cur)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(cur.Status.Conditions, string(mcsv1.ServiceExportConditionValid))).To(BeTrue())
		g.Expect(cur.Labels).NotTo(HaveKey(straitv1.LabelManagedBy), "the person's export stays theirs")
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())

	// Withdrawn by its owner, the import goes.
	g.Expect(c3.Client.Delete(ctx, se)).To(Succeed())
	g.Eventually(func() error {
		return f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: "ops", Name: "grafana"}, &mcsv1.ServiceImport{})
	}, 15*time.Second, 100*time.Millisecond).Should(MatchError(ContainSubstring("not found")))
}
