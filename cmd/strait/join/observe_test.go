package join

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/straitnet/strait/test/clusters"
)

// join observes a dual-stack member's ranges in both families from a real API server:
// each family's nodes' pod CIDRs summarised apart, every ServiceCIDR of either family.
func TestJoinObservesBothFamilies(t *testing.T) {
	c := clusters.NewCluster(t)
	ctx := context.Background()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, c.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	for i, cidrs := range [][]string{{"10.8.1.0/24", "fd10:8:0:1::/64"}, {"10.8.2.0/24", "fd10:8:0:2::/64"}} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: []string{"n1", "n2"}[i]}, Spec: corev1.NodeSpec{PodCIDR: cidrs[0], PodCIDRs: cidrs}}
		if err := c.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	extra := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "dual-stack"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.89.0.0/16", "fd10:88::/112"}}}
	if err := c.Client.Create(ctx, extra); err != nil {
		t.Fatal(err)
	}
	m, err := connectMember(kc, "")
	if err != nil {
		t.Fatal(err)
	}
	o, err := m.observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.8.0.0/22", "fd10:8::/62"}; !slices.Equal(o.PodCIDRs, want) {
		t.Errorf("pod CIDRs %v (nodes' %v), want %v", o.PodCIDRs, o.NodePodCIDRs, want)
	}
	if !slices.Contains(o.ServiceCIDRs, "10.89.0.0/16") || !slices.Contains(o.ServiceCIDRs, "fd10:88::/112") {
		t.Errorf("service CIDRs %v: want both of ServiceCIDR dual-stack's, 10.89.0.0/16 and fd10:88::/112", o.ServiceCIDRs)
	}
}
