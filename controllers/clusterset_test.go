package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/plan"
)

// A ClusterSet makes every member hold its Membership, a Peer per other member and the
// ServiceExports declared for it; the ClusterSet turns Ready for its generation.
func TestClusterSetWritesEveryMember(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	cs := f.newClusterSet(t, "c1", "c2", "c3")
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "shop", Name: "cart"}}
	f.create(t, cs)

	cur := f.waitReady(t, cs)
	g.Expect(cur.Status.Summary.Clusters).To(Equal("3/3"))
	g.Expect(apimeta.FindStatusCondition(cur.Status.Conditions, meta.StalledCondition)).To(BeNil())
	g.Expect(apimeta.FindStatusCondition(cur.Status.Conditions, meta.ReconcilingCondition)).To(BeNil())
	g.Expect(cur.Finalizers).To(ContainElement(straitv1.Finalizer))

	for _, m := range f.env.Members {
		ms := &straitv1.Membership{}
		g.Expect(m.Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, ms)).To(Succeed())
		g.Expect(ms.Spec.ClusterID).To(Equal(m.Name))
		g.Expect(ms.Spec.ClusterSet).To(Equal(cs.Namespace + "/" + cs.Name))
		g.Expect(ms.Labels).To(HaveKeyWithValue(straitv1.LabelManagedBy, straitv1.ManagedByHub))
		g.Expect(ms.ManagedFields).To(ContainElement(HaveField("Manager", straitv1.FieldManager)))

		var peers straitv1.PeerList
		g.Expect(m.Client.List(ctx, &peers, client.InNamespace(straitv1.SystemNamespace))).To(Succeed())
		var names []string
		for _, p := range peers.Items {
			names = append(names, p.Name)
		}
		g.Expect(names).To(HaveLen(2))
		g.Expect(names).NotTo(ContainElement(m.Name))

		// The export's namespace did not exist in the member: the hub made it.
		se := &mcsv1.ServiceExport{}
		g.Expect(m.Client.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "cart"}, se)).To(Succeed())
		// No such service anywhere yet: Valid=False with the MCS reason.
		g.Eventually(func(g Gomega) {
			g.Expect(m.Client.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "cart"}, se)).To(Succeed())
			valid := apimeta.FindStatusCondition(se.Status.Conditions, string(mcsv1.ServiceExportConditionValid))
			g.Expect(valid).NotTo(BeNil())
			g.Expect(valid.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(valid.Reason).To(Equal(string(mcsv1.ServiceExportReasonNoService)))
			g.Expect(f.gauge(g, "strait_hub_exports_invalid", cs)).To(Equal(1.0))
		}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	}
	// Per-cluster status: connected, with the objects counted.
	for _, c := range cur.Status.Clusters {
		conn := apimeta.FindStatusCondition(c.Conditions, straitv1.ConditionConnected)
		g.Expect(conn).NotTo(BeNil())
		g.Expect(conn.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Inventory).To(HaveKeyWithValue("Membership", int32(1)))
		g.Expect(c.Inventory).To(HaveKeyWithValue("Peer", int32(2)))
	}
}

// With the ipsec cable, the hub copies the PSK from the hub's Secret into every member.
func TestIPsecPSKIsCopiedToMembers(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	src := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ipsec-psk", Namespace: f.hubNS},
		Data: map[string][]byte{"psk": []byte("a-long-pre-shared-key-for-tests")}}
	g.Expect(f.env.Hub.Client.Create(ctx, src)).To(Succeed())
	t.Cleanup(func() { _ = f.env.Hub.Client.Delete(ctx, src) })

	cs := f.newClusterSet(t, "c1", "c2")
	cs.Spec.Cable = straitv1.CableSpec{Driver: straitv1.CableIPsec, PSKSecretRef: &meta.LocalObjectReference{Name: "ipsec-psk"}}
	f.create(t, cs)
	f.waitReady(t, cs)
	for _, n := range []string{"c1", "c2"} {
		s := &corev1.Secret{}
		g.Expect(f.env.Member(n).Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: plan.IPsecPSKSecretName}, s)).To(Succeed())
		g.Expect(s.Data).To(HaveKeyWithValue("psk", []byte("a-long-pre-shared-key-for-tests")))
		ms := &straitv1.Membership{}
		g.Expect(f.env.Member(n).Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, ms)).To(Succeed())
		g.Expect(ms.Spec.Cable.PSKSecretName).To(Equal(plan.IPsecPSKSecretName))
	}
	// c3 is not a member: it got nothing.
	s := &corev1.Secret{}
	err := f.env.Member("c3").Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: plan.IPsecPSKSecretName}, s)
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	g.Expect(err).To(HaveOccurred())

	// Back to wireguard: the copies go.
	f.update(t, cs, func(c *straitv1.ClusterSet) { c.Spec.Cable = straitv1.CableSpec{Driver: straitv1.CableWireGuard} })
	g.Eventually(func() error {
		return f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: plan.IPsecPSKSecretName}, &corev1.Secret{})
	}, 10*time.Second, 100*time.Millisecond).Should(MatchError(ContainSubstring("not found")))
}

// A cluster belongs to one ClusterSet: a second ClusterSet naming it is refused for that
// cluster (Ready=False, naming the owner) and writes nothing there, while its other
// clusters converge.
func TestClusterBelongsToOneClusterSet(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	first := f.newClusterSet(t, "c1", "c2")
	f.create(t, first)
	f.waitReady(t, first)

	second := f.newClusterSet(t, "c2", "c3")
	f.create(t, second)
	g.Eventually(func(g Gomega) {
		cur := f.get(g, second)
		g.Expect(cur.Status.Clusters).To(HaveLen(2))
		for _, c := range cur.Status.Clusters {
			ready := apimeta.FindStatusCondition(c.Conditions, meta.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			if c.Name == "c2" {
				g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(ready.Message).To(ContainSubstring(first.Namespace + "/" + first.Name))
			} else {
				g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
			}
		}
	}, 15*time.Second, 100*time.Millisecond).Should(Succeed())
	ms := &straitv1.Membership{}
	g.Expect(f.env.Member("c2").Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, ms)).To(Succeed())
	g.Expect(ms.Spec.ClusterSet).To(Equal(first.Namespace + "/" + first.Name))
	g.Expect(f.env.Member("c3").Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, ms)).To(Succeed())
	g.Expect(ms.Spec.ClusterSet).To(Equal(second.Namespace + "/" + second.Name))
}

// A cluster without kubeConfig is the hub's own cluster: the hub writes its objects
// there with its own identity.
func TestHubClusterAsMember(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	cs := f.newClusterSet(t, "c1")
	cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{Name: "hub",
		PodCIDRs: []string{"10.50.0.0/16"}, ServiceCIDRs: []string{"10.150.0.0/16"}})
	f.create(t, cs)
	f.waitReady(t, cs)
	ms := &straitv1.Membership{}
	g.Expect(f.env.Hub.Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, ms)).To(Succeed())
	g.Expect(ms.Spec.ClusterID).To(Equal("hub"))
	g.Expect(f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "hub"}, &straitv1.Peer{})).To(Succeed())
	// Deleted, the ClusterSet takes the hub's own Membership with it.
	f.remove(t, cs)
	err := f.env.Hub.Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, ms)
	g.Expect(err).To(MatchError(ContainSubstring("not found")))
}
