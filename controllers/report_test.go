package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// TestStraitDNSsClusterSetIPsAreNoDrift: strait dns's writer sets a new ClusterSetIP
// import's spec.ips in every member that imports it, a resourceVersion the hub did not
// write. The members' reports of their ServiceImports still equal the hub's record,
// which follows the digest the hub wrote and who else owns the import's fields: no
// member reads as changed by someone else, and none is passed over in full for it.
// Someone's edit of the import afterwards still does.
func TestStraitDNSsClusterSetIPsAreNoDrift(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	serveService(t, f.env.Member("c1"), "vipreport", "echo", "10.0.0.61", "10.1.0.61")
	for _, m := range []string{"c1", "c2"} {
		runClusterSetIPWriter(t, f.env.Member(m))
	}
	cs := f.newClusterSet(t, "c1", "c2")
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "vipreport", Name: "echo"}}
	f.create(t, cs)
	f.waitReady(t, cs)
	key := types.NamespacedName{Namespace: "vipreport", Name: "echo"}
	for _, m := range []string{"c1", "c2"} {
		g.Eventually(func(g Gomega) {
			si := &mcsv1.ServiceImport{}
			g.Expect(f.env.Member(m).Client.Get(ctx, key, si)).To(Succeed())
			g.Expect(si.Spec.IPs).To(HaveLen(1))
			g.Expect(f.gauge(g, "strait_hub_member_reporting", cs, m)).To(Equal(1.0))
		}, 20*time.Second, 100*time.Millisecond).Should(Succeed(), "member %s: no clusterset IP, or no report", m)
	}
	// The report's debounce, the settle after the hub's last write (2 s) and a pass:
	// a drift shows within 6 s (TestAnImportDeletedInAMemberIsPutBackFromItsReport).
	g.Consistently(func(g Gomega) {
		for _, m := range []string{"c1", "c2"} {
			g.Expect(f.gauge(g, "strait_hub_member_report_drift_total", cs, m)).To(BeZero(), "member %s", m)
		}
	}, 7*time.Second, 250*time.Millisecond).Should(Succeed(), "strait dns's clusterset IPs read as someone else's change")

	// Someone's edit of c2's import is another hand in it: one drift, one pass over c2,
	// after which the hub's record holds the edit's manager too and c2 is left alone.
	c2 := f.env.Member("c2").Client
	si := &mcsv1.ServiceImport{}
	g.Expect(c2.Get(ctx, key, si)).To(Succeed())
	si.Annotations["example.com/note"] = "edited"
	g.Expect(c2.Update(ctx, si, client.FieldOwner("kubectl-edit"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(f.gauge(g, "strait_hub_member_report_drift_total", cs, "c2")).To(Equal(1.0))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed(), "someone's edit of c2's import was not seen")
	g.Consistently(func(g Gomega) {
		g.Expect(f.gauge(g, "strait_hub_member_report_drift_total", cs, "c2")).To(Equal(1.0))
		g.Expect(f.gauge(g, "strait_hub_member_report_drift_total", cs, "c1")).To(BeZero())
	}, 7*time.Second, 250*time.Millisecond).Should(Succeed(), "the hub keeps passing over c2 after the edit")
}
