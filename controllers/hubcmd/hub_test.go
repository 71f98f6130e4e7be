package hubcmd

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/freeport"
	"github.com/straitnet/strait/test/promcheck"
)

// `straitd hub` as a person runs it: against a hub kubeconfig, with leader election and
// metrics on; a ClusterSet over one member turns Ready, the Lease names the leader and
// /metrics reports the member as connected.
func TestHubCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("needs kube-apiservers (run without -short)")
	}
	g := NewWithT(t)
	ctx := context.Background()
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	env, err := clusters.Start(ctx, clusters.Options{Members: []string{"c1"}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	kc := filepath.Join(t.TempDir(), "hub.kubeconfig")
	g.Expect(os.WriteFile(kc, env.Hub.KubeConfig, 0o600)).To(Succeed())
	metricsAddr, probeAddr := freeport.Addr(t), freeport.Addr(t)

	cmd := NewCommand()
	cmd.SetArgs([]string{"--kubeconfig", kc, "--webhook-certs", "none", "--metrics-bind-address", metricsAddr,
		"--health-probe-bind-address", probeAddr, "--member-probe-interval", "1s", "--log-level", "error"})
	cmd.SetOut(io.Discard)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(runCtx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("straitd hub: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("straitd hub did not stop")
		}
	})

	cs := &straitv1.ClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: env.HubNamespace},
		Spec: straitv1.ClusterSetSpec{Clusters: []straitv1.ClusterSpec{{
			Name:       "c1",
			KubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: env.Member("c1").KubeConfigSecret}},
			PodCIDRs:   []string{"10.1.0.0/16"}, ServiceCIDRs: []string{"10.101.0.0/16"},
		}}},
	}
	g.Expect(env.Hub.Client.Create(ctx, cs)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := &straitv1.ClusterSet{}
		g.Expect(env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(cs), cur)).To(Succeed())
		g.Expect(apimeta.IsStatusConditionTrue(cur.Status.Conditions, meta.ReadyCondition)).To(BeTrue())
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(env.Member("c1").Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, &straitv1.Membership{})).To(Succeed())

	lease := &coordinationv1.Lease{}
	g.Expect(env.Hub.Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "strait-hub.strait.io"}, lease)).To(Succeed())
	g.Expect(lease.Spec.HolderIdentity).NotTo(BeNil())

	g.Eventually(func(g Gomega) {
		body := get(g, "http://"+metricsAddr+"/metrics")
		g.Expect(body).To(ContainSubstring(`strait_hub_members_connected{clusterset="strait-system.prod"} 1`))
		g.Expect(body).To(ContainSubstring(`strait_hub_reconcile_duration_seconds_count{clusterset="strait-system.prod"}`))
		g.Expect(body).To(ContainSubstring(`strait_hub_objects_applied_total{clusterset="strait-system.prod",member="c1"}`))
	}, 10*time.Second, 200*time.Millisecond).Should(Succeed())
	// The hub's own series as a user's CI would lint them.
	promcheck.Metrics(t, []byte(get(g, "http://"+metricsAddr+"/metrics")), "strait_hub_")
	g.Expect(get(g, "http://"+probeAddr+"/readyz")).To(Equal("ok"))
}

func get(g Gomega, url string) string {
	resp, err := http.Get(url) //nolint:gosec,noctx // loopback address made by the test
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return strings.TrimSpace(string(b))
}
