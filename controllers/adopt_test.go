package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/hubtest"
)

// TestANewHubAdoptsWhatIsInPlace: a hub that starts over members already holding what
// it would write (a restart, a new leader, an upgrade) writes none of it again, but for
// the one object someone edited while no hub ran, which it puts back. Each object the
// hub writes carries the digest of its content; the new hub has no record of its
// writes, and takes an object whose digest is its plan's, and whose fields nobody else
// owns, as written.
func TestANewHubAdoptsWhatIsInPlace(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	serveService(t, f.env.Member("c1"), "adopt", "web", "10.0.0.21", "10.1.0.21")
	cs := f.newClusterSet(t, "c1", "c2")
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "adopt", Name: "web"}}
	f.create(t, cs)
	imp := types.NamespacedName{Namespace: "adopt", Name: "web"}
	c2 := f.env.Member("c2").Client
	g.Eventually(func(g Gomega) {
		si := &mcsv1.ServiceImport{}
		g.Expect(c2.Get(ctx, imp, si)).To(Succeed())
		g.Expect(si.Status.Clusters).To(ConsistOf(mcsv1.ClusterStatus{Cluster: "c1"}))
		g.Expect(si.Annotations).To(HaveKey(straitv1.AnnotationDigest))
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())
	f.waitReady(t, cs)
	f.settledApplies(t, cs, "c1", "c2")

	// No hub runs: someone edits c2's ServiceImport. A new hub starts, also when the
	// edit fails, for the tests after this one.
	func() {
		f.stop()
		defer f.restartHub(t)
		si := &mcsv1.ServiceImport{}
		g.Expect(c2.Get(ctx, imp, si)).To(Succeed())
		si.Spec.Ports[0].Port = 8081
		g.Expect(c2.Update(ctx, si, client.FieldOwner("someone"))).To(Succeed())
	}()
	g.Eventually(func(g Gomega) {
		cur := &mcsv1.ServiceImport{}
		g.Expect(c2.Get(ctx, imp, cur)).To(Succeed())
		g.Expect(cur.Spec.Ports).To(ConsistOf(HaveField("Port", int32(80))))
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed(), "the edit was not put back")
	f.waitReady(t, cs)
	f.settledApplies(t, cs, "c1", "c2")
	// The ServiceImport and its status; nothing else of the two members (Membership,
	// Peers, the ServiceExport, the ServiceImport in c1, the EndpointSlices, the derived
	// Services and their slices).
	g.Expect(f.gauge(g, "strait_hub_objects_applied_total", cs, "c1")).To(BeZero(), "c1 held everything; the new hub wrote there")
	g.Expect(f.gauge(g, "strait_hub_objects_applied_total", cs, "c2")).To(Equal(2.0), "the new hub wrote more than the edited ServiceImport in c2")
}

// restartHub stops the hub controller, if it runs, and starts a new one, as a new
// process would: no record of its writes, its metrics from zero.
func (f *fixture) restartHub(t *testing.T) {
	t.Helper()
	f.stop()
	reg := prometheus.NewRegistry()
	stop, err := hubtest.RunController(f.env, 1*time.Second, reg)
	if err != nil {
		t.Fatalf("starting the hub again: %v", err)
	}
	f.stop, f.metrics = stop, reg
}

// TestTheEchoOfANewImportIsTheHubsOwn: a new export is one pass over each member. The
// watch hands on the echo of the ServiceImport's first write (its spec) before the hub
// has written its status, and echoes may come before a write returns: the hub knows
// them by the digest it recorded before writing. Taking them for someone else's change
// made a second pass, a full one, over every member for every export.
func TestTheEchoOfANewImportIsTheHubsOwn(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	serveService(t, f.env.Member("c1"), "echo", "web", "10.0.0.31", "10.1.0.31")
	cs := f.newClusterSet(t, "c1", "c2", "c3")
	f.create(t, cs)
	f.waitReady(t, cs)
	before := f.settledApplies(t, cs, "c1", "c2", "c3")
	driftBefore := f.memberCounts(g, "strait_hub_member_report_drift_total", cs, "c1", "c2", "c3")

	f.update(t, cs, func(cur *straitv1.ClusterSet) {
		cur.Spec.Exports = []straitv1.ExportSpec{{Namespace: "echo", Name: "web"}}
	})
	for _, m := range []string{"c1", "c2", "c3"} {
		g.Eventually(func(g Gomega) {
			si := &mcsv1.ServiceImport{}
			g.Expect(f.env.Member(m).Client.Get(context.Background(), types.NamespacedName{Namespace: "echo", Name: "web"}, si)).To(Succeed())
			g.Expect(si.Status.Clusters).NotTo(BeEmpty())
		}, 15*time.Second, 100*time.Millisecond).Should(Succeed(), "member %s", m)
	}
	f.waitReady(t, cs)
	after := f.settledApplies(t, cs, "c1", "c2", "c3")
	drift := f.memberCounts(g, "strait_hub_member_report_drift_total", cs, "c1", "c2", "c3")
	for _, m := range []string{"c1", "c2", "c3"} {
		// A report that showed the hub's writes later than reportSettle is taken for
		// someone's change and passed over again, as it should be: that is a slow
		// member (CI's machine under other packages' API servers saw one), not an echo
		// taken for a change, and strait_hub_member_report_drift_total counts it.
		late := drift[m] - driftBefore[m]
		g.Expect(after[m]-before[m]-late).To(Equal(1.0), "passes over %s for one new export (%v in all, %v of them for a late report)",
			m, after[m]-before[m], late)
	}
}
