package controllers_test

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// suspend: true stops writes to members; reconcile.fluxcd.io/requestedAt triggers a
// reconcile and is echoed in status.lastHandledReconcileAt.
func TestSuspendAndRequestedAt(t *testing.T) {
	f := hub(t)
	g := NewWithT(t)
	ctx := context.Background()
	cs := f.readyClusterSet(t, "c1", "c2")

	f.update(t, cs, func(c *straitv1.ClusterSet) {
		c.Spec.Suspend = true
		c.Spec.Exports = []straitv1.ExportSpec{{Namespace: "shop", Name: "cart"}}
	})
	g.Consistently(func() error {
		return f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "cart"}, &mcsv1.ServiceExport{})
	}, 2*time.Second, 200*time.Millisecond).Should(MatchError(ContainSubstring("not found")))

	// A reconcile request is answered even while suspended.
	f.update(t, cs, func(c *straitv1.ClusterSet) {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[meta.ReconcileRequestAnnotation] = "2026-11-22T03:00:00Z"
	})
	g.Eventually(func(g Gomega) {
		g.Expect(f.get(g, cs).Status.LastHandledReconcileAt).To(Equal("2026-11-22T03:00:00Z"))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "cart"}, &mcsv1.ServiceExport{})).
		To(MatchError(ContainSubstring("not found")))

	// Resumed, the change is written; a new request is echoed again.
	f.update(t, cs, func(c *straitv1.ClusterSet) {
		c.Spec.Suspend = false
		c.Annotations[meta.ReconcileRequestAnnotation] = "2026-11-22T03:05:00Z"
	})
	g.Eventually(func() error {
		return f.env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "cart"}, &mcsv1.ServiceExport{})
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
	cur := f.waitReady(t, cs)
	g.Expect(cur.Status.LastHandledReconcileAt).To(Equal("2026-11-22T03:05:00Z"))
}
