package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// TestAnImportDeletedInAMemberIsPutBackFromItsReport: the hub does not watch the
// ServiceImports it writes (members × exports objects); each member's strait dns
// reports its print of them in the Membership's status.prints. Someone deletes c2's
// ServiceImport: the report changes, differs from the hub's record, and the hub passes
// over c2 in full and writes it again, in seconds, not at the resync (10 minutes).
func TestAnImportDeletedInAMemberIsPutBackFromItsReport(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	serveService(t, f.env.Member("c1"), "report", "web", "10.0.0.41", "10.1.0.41")
	cs := f.newClusterSet(t, "c1", "c2")
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "report", Name: "web"}}
	f.create(t, cs)
	f.waitReady(t, cs)
	f.settledApplies(t, cs, "c1", "c2")
	for _, m := range []string{"c1", "c2"} {
		g.Eventually(func(g Gomega) {
			g.Expect(f.gauge(g, "strait_hub_member_reporting", cs, m)).To(Equal(1.0))
		}, 15*time.Second, 200*time.Millisecond).Should(Succeed(), "member %s does not report", m)
	}

	c2 := f.env.Member("c2").Client
	imp := types.NamespacedName{Namespace: "report", Name: "web"}
	si := &mcsv1.ServiceImport{}
	g.Expect(c2.Get(ctx, imp, si)).To(Succeed())
	uid := si.UID
	deleted := time.Now()
	g.Expect(c2.Delete(ctx, si)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := &mcsv1.ServiceImport{}
		g.Expect(c2.Get(ctx, imp, cur)).To(Succeed())
		g.Expect(cur.UID).NotTo(Equal(uid))
		g.Expect(cur.Status.Clusters).To(ConsistOf(mcsv1.ClusterStatus{Cluster: "c1"}))
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed(), "the deleted ServiceImport was not put back")
	// The report's debounce, the settle after the hub's last write (2 s) and a pass.
	g.Expect(time.Since(deleted)).To(BeNumerically("<", 6*time.Second), "put back too late for a report")
	g.Expect(f.gauge(g, "strait_hub_member_report_drift_total", cs, "c2")).To(Equal(1.0))
	g.Expect(f.gauge(g, "strait_hub_member_report_drift_total", cs, "c1")).To(BeZero(), "c1 changed nothing")
}
