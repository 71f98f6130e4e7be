package controllers_test

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// TestAChangeInOneMemberIsReadFromThatMemberOnly: the hub reads a member's facts
// (its gateways, peers, allocations, exported services and their slices) again only
// when its informers reported a change of them. A new endpoint of a service exported
// from c1 reaches the others' imports, and the hub read c1 for it, not c2 or c3
// (strait_hub_member_facts_reads_total). A Peer's latency, which a gateway writes at
// every health round, is not read again at once; its state is, and shows in the
// ClusterSet's status without anything else changing.
func TestAChangeInOneMemberIsReadFromThatMemberOnly(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	c1, c2 := f.env.Member("c1"), f.env.Member("c2")
	serveService(t, c1, "facts", "web", "None", "10.1.0.51") // headless: its imports hold the pods
	cs := f.newClusterSet(t, "c1", "c2", "c3")
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "facts", Name: "web", Clusters: []string{"c1"}}}
	f.create(t, cs)
	f.waitReady(t, cs)
	imported := func(ip string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			var slices discoveryv1.EndpointSliceList
			g.Expect(c2.Client.List(ctx, &slices, client.InNamespace("facts"), client.MatchingLabels{mcsv1.LabelServiceName: "web"})).To(Succeed())
			var ips []string
			for _, s := range slices.Items {
				for _, e := range s.Endpoints {
					ips = append(ips, e.Addresses...)
				}
			}
			g.Expect(ips).To(ContainElement(ip))
		}, 15*time.Second, 100*time.Millisecond).Should(Succeed())
	}
	imported("10.1.0.51")
	addEndpoint := func(ip string) {
		t.Helper()
		s := &discoveryv1.EndpointSlice{}
		g.Expect(c1.Client.Get(ctx, types.NamespacedName{Namespace: "facts", Name: "web-abcde"}, s)).To(Succeed())
		ready := true
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		g.Expect(c1.Client.Update(ctx, s)).To(Succeed())
		imported(ip)
	}
	const reads = "strait_hub_member_facts_reads_total"
	before := f.settledCounts(t, reads, cs, "c1", "c2", "c3")

	addEndpoint("10.1.0.52")
	after := f.settledCounts(t, reads, cs, "c1", "c2", "c3")
	g.Expect(after["c1"]).To(BeNumerically(">", before["c1"]), "the hub did not read c1, whose slice changed")
	g.Expect(after["c2"]).To(Equal(before["c2"]), "nothing changed in c2, yet the hub read its facts again")
	g.Expect(after["c3"]).To(Equal(before["c3"]), "nothing changed in c3, yet the hub read its facts again")

	// c2's active gateway reports its connection to c1: first a state, then only a
	// latency at the next health round.
	setPeer := func(state string, latency int64) {
		t.Helper()
		p := &straitv1.Peer{}
		g.Expect(c2.Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "c1"}, p)).To(Succeed())
		p.Status.State, p.Status.LatencyMicros = state, latency
		g.Expect(c2.Client.Status().Update(ctx, p)).To(Succeed())
	}
	connection := func(state string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			cur := f.get(g, cs)
			i := slices.IndexFunc(cur.Status.Clusters, func(c straitv1.ClusterStatus) bool { return c.Name == "c2" })
			g.Expect(i).NotTo(Equal(-1))
			g.Expect(cur.Status.Clusters[i].Connections).To(ContainElement(HaveField("State", state)))
		}, 15*time.Second, 100*time.Millisecond).Should(Succeed())
	}
	setPeer(straitv1.PeerConnecting, 0)
	connection(straitv1.PeerConnecting)
	before = f.settledCounts(t, reads, cs, "c1", "c2", "c3")
	setPeer(straitv1.PeerConnecting, 1234)
	addEndpoint("10.1.0.53") // a reconcile: c2's latency alone is not read for it
	after = f.settledCounts(t, reads, cs, "c1", "c2", "c3")
	g.Expect(after["c2"]).To(Equal(before["c2"]), "only a Peer's latency changed in c2, yet the hub read its facts at once")
	setPeer(straitv1.PeerConnected, 1234)
	connection(straitv1.PeerConnected)
}
