package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// TestAChangeForOneMemberReappliesThatMemberOnly: a new gateway node selector for c2
// changes c2's Membership and nothing the other members hold. The hub passes over c2
// (strait_hub_member_applies_total goes up there, and c2's Membership says the new
// selector) and leaves c1 and c3 alone: their inputs hash to what it last applied.
func TestAChangeForOneMemberReappliesThatMemberOnly(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	cs := f.newClusterSet(t, "c1", "c2", "c3")
	f.create(t, cs)
	f.waitReady(t, cs)
	before := f.settledApplies(t, cs, "c1", "c2", "c3")
	for _, c := range []string{"c1", "c2", "c3"} {
		g.Expect(before[c]).To(BeNumerically(">=", 1), "no pass over %s yet", c)
	}

	selector := map[string]string{"strait.io/gateway": "yes"}
	f.update(t, cs, func(cur *straitv1.ClusterSet) { cur.Spec.Clusters[1].Gateway.NodeSelector = selector })
	g.Eventually(func(g Gomega) {
		m := &straitv1.Membership{}
		g.Expect(f.env.Member("c2").Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, m)).To(Succeed())
		g.Expect(m.Spec.GatewayNodeSelector).To(Equal(selector))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	f.waitReady(t, cs)

	after := f.settledApplies(t, cs, "c1", "c2", "c3")
	g.Expect(after["c2"]).To(BeNumerically(">", before["c2"]), "c2 was not passed over")
	g.Expect(after["c1"]).To(Equal(before["c1"]), "c1's inputs did not change, yet the hub passed over it")
	g.Expect(after["c3"]).To(Equal(before["c3"]), "c3's inputs did not change, yet the hub passed over it")
}

// TestDriftTheWatchCannotTellIsRepairedAtTheResync: someone takes the hub's Peer in
// c2 over, stripping the hub's labels (so the change no longer looks like one to the
// hub's objects) and naming another cluster. The member's inputs did not change, so the
// hub skips it, until the periodic resync (spec.interval, here 10 s) checks every
// object and puts the Peer back.
func TestDriftTheWatchCannotTellIsRepairedAtTheResync(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	cs := f.newClusterSet(t, "c1", "c2")
	cs.Spec.Interval = &metav1.Duration{Duration: 10 * time.Second}
	f.create(t, cs)
	f.waitReady(t, cs)

	c2 := f.env.Member("c2").Client
	key := types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "c1"}
	peer := &straitv1.Peer{}
	g.Expect(c2.Get(ctx, key, peer)).To(Succeed())
	want := peer.Spec.ClusterID
	peer.Labels = nil
	peer.Spec.ClusterID = "someone-else"
	g.Expect(c2.Update(ctx, peer)).To(Succeed())

	g.Eventually(func(g Gomega) {
		cur := &straitv1.Peer{}
		g.Expect(c2.Get(ctx, key, cur)).To(Succeed())
		g.Expect(cur.Labels).To(HaveKeyWithValue(straitv1.LabelManagedBy, straitv1.ManagedByHub))
		g.Expect(cur.Spec.ClusterID).To(Equal(want))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}

// settledApplies waits until the hub's passes over the clusters stop (no change for
// two seconds) and returns their counts.
func (f *fixture) settledApplies(t *testing.T, cs *straitv1.ClusterSet, clusters ...string) map[string]float64 {
	t.Helper()
	return f.settledCounts(t, "strait_hub_member_applies_total", cs, clusters...)
}

// settledCounts waits until a per-member counter of cs stops moving for the clusters
// (no change for two seconds) and returns its values.
func (f *fixture) settledCounts(t *testing.T, name string, cs *straitv1.ClusterSet, clusters ...string) map[string]float64 {
	t.Helper()
	g := NewWithT(t)
	var last map[string]float64
	stableSince := time.Now()
	g.Eventually(func() bool {
		cur := f.memberCounts(g, name, cs, clusters...)
		if !equalCounts(cur, last) {
			last, stableSince = cur, time.Now()
		}
		return time.Since(stableSince) >= 2*time.Second
	}, 30*time.Second, 200*time.Millisecond).Should(BeTrue())
	return last
}

// memberCounts reads a per-member counter of cs per cluster (0 where it has none).
func (f *fixture) memberCounts(g Gomega, name string, cs *straitv1.ClusterSet, clusters ...string) map[string]float64 {
	families, err := f.metrics.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]float64{}
	for _, c := range clusters {
		out[c] = 0
	}
	for _, fam := range families {
		if fam.GetName() != name {
			continue
		}
		for _, m := range fam.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if _, ok := out[labels["member"]]; ok && labels["clusterset"] == cs.Namespace+"."+cs.Name {
				out[labels["member"]] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func equalCounts(a, b map[string]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestAPeerStatusWriteIsNoChangeToTheHub: the active gateway writes every Peer's status
// at each health round (latency, loss, byte counters), which gives the Peer a new
// resourceVersion each time. That is the agent's part of the object, not a change to
// what the hub wrote: the hub must not pass over the member for it (at 255 members it
// passed over every member every 5 s).
func TestAPeerStatusWriteIsNoChangeToTheHub(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	cs := f.readyClusterSet(t, "c1", "c2")
	before := f.settledApplies(t, cs, "c1", "c2")

	c2 := f.env.Member("c2").Client
	key := types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "c1"}
	for i := range 5 {
		peer := &straitv1.Peer{}
		g.Expect(c2.Get(ctx, key, peer)).To(Succeed())
		rv := peer.ResourceVersion
		peer.Status.LatencyMicros = int64(100 + i)
		g.Expect(c2.Status().Update(ctx, peer)).To(Succeed())
		g.Expect(peer.ResourceVersion).NotTo(Equal(rv), "the status write gave the Peer no new resourceVersion")
		time.Sleep(300 * time.Millisecond)
	}

	after := f.settledApplies(t, cs, "c1", "c2")
	g.Expect(after).To(Equal(before), "the hub passed over a member because its agent wrote a Peer's status")
}
