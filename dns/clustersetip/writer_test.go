package clustersetip_test

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers"
	"github.com/straitnet/strait/dns/clustersetip"
	"github.com/straitnet/strait/dns/source"
	"github.com/straitnet/strait/test/clusters"
)

var restConfig *rest.Config

func TestMain(m *testing.M) {
	clusters.TestMain(func(c *clusters.Cluster) int {
		restConfig = c.Config
		return m.Run()
	})
}

func hubLabels(importName string) map[string]string {
	return map[string]string{straitv1.LabelManagedBy: straitv1.ManagedByHub, straitv1.LabelServiceImport: importName}
}

func TestWantedIPsAreTheHubsDerivedServicesClusterIPs(t *testing.T) {
	imp := func(name string, typ mcsv1.ServiceImportType) clustersetip.Import {
		return clustersetip.ImportOf(&mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name}, Spec: mcsv1.ServiceImportSpec{Type: typ}})
	}
	var derived []clustersetip.Derived
	svc := func(name string, labels map[string]string, ips ...string) {
		d, ok := clustersetip.DerivedOf(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, Labels: labels},
			Spec: corev1.ServiceSpec{ClusterIPs: ips}})
		if ok {
			derived = append(derived, d)
		}
	}
	svc("strait-web-1", hubLabels("web"), "10.96.0.10", "fd00::10")
	svc("strait-db-1", hubLabels("db"), "10.96.0.11")
	svc("strait-new-1", hubLabels("new"))
	svc("strait-none-1", hubLabels("none"), corev1.ClusterIPNone)
	// A Service that only says it is derived, without the hub's mark.
	svc("mine", map[string]string{straitv1.LabelServiceImport: "mine"}, "10.96.0.12")
	if len(derived) != 4 {
		t.Fatalf("DerivedOf took %d Services, want the hub's 4: %v", len(derived), derived)
	}
	got := clustersetip.WantedIPs(
		[]clustersetip.Import{imp("web", mcsv1.ClusterSetIP), imp("db", mcsv1.Headless), imp("new", mcsv1.ClusterSetIP), imp("mine", mcsv1.ClusterSetIP), imp("none", mcsv1.ClusterSetIP)},
		derived)
	want := map[types.NamespacedName][]string{{Namespace: "app", Name: "web"}: {"10.96.0.10", "fd00::10"}}
	if len(got) != len(want) || !slices.Equal(got[types.NamespacedName{Namespace: "app", Name: "web"}], want[types.NamespacedName{Namespace: "app", Name: "web"}]) {
		t.Errorf("WantedIPs = %v, want %v", got, want)
	}
}

// TestClusterSetIPFollowsTheDerivedServiceAndSurvivesTheHubsApply runs the writer
// against a real API server with the objects the hub writes, applied as the hub applies
// them (the hub's apply body, field manager strait-hub, forced, no spec.ips).
func TestClusterSetIPFollowsTheDerivedServiceAndSurvivesTheHubsApply(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scheme, err := source.Scheme()
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(restConfig, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "csip"}})).To(Succeed())

	done := make(chan error, 1)
	go func() {
		done <- clustersetip.RunWithSource(ctx, restConfig, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	}()
	defer func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	}()

	hubApply := func(o client.Object) {
		t.Helper()
		body, _, err := controllers.ApplyBody(o)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.Apply(ctx, client.ApplyConfigurationFromUnstructured(body), client.FieldOwner(straitv1.FieldManager), client.ForceOwnership)).To(Succeed())
	}
	importOf := func(port int32) *mcsv1.ServiceImport {
		return &mcsv1.ServiceImport{TypeMeta: metav1.TypeMeta{APIVersion: mcsv1.GroupVersion.String(), Kind: "ServiceImport"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "csip", Name: "web"},
			Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
				Ports: []mcsv1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: port}}}}
	}
	hubApply(importOf(80))
	policy := corev1.IPFamilyPolicySingleStack
	derived := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "csip", Name: "strait-web-0", Labels: hubLabels("web")},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, IPFamilyPolicy: &policy, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
	hubApply(derived)

	ips := func(g Gomega) []string {
		si := &mcsv1.ServiceImport{}
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: "csip", Name: "web"}, si)).To(Succeed())
		return si.Spec.IPs
	}
	live := &corev1.Service{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(derived), live)).To(Succeed())
	g.Expect(live.Spec.ClusterIPs).To(HaveLen(1))
	start := time.Now()
	g.Eventually(ips, 5*time.Second, 20*time.Millisecond).Should(Equal(live.Spec.ClusterIPs))
	t.Logf("spec.ips written %v after the derived Service", time.Since(start).Round(time.Millisecond))

	// The hub's next apply (a port changed) names no spec.ips: they stay.
	hubApply(importOf(8080))
	g.Consistently(ips, time.Second, 50*time.Millisecond).Should(Equal(live.Spec.ClusterIPs))

	// The derived Service goes (the import became headless, say): so do the IPs.
	g.Expect(c.Delete(ctx, live)).To(Succeed())
	g.Eventually(ips, 5*time.Second, 20*time.Millisecond).Should(BeEmpty())
}

// An import deleted between the snapshot a pass read and its apply: the apply neither
// fails the pass nor creates the import again.
func TestAWriteToAnImportGoneMeanwhileCreatesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme, err := source.Scheme()
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(restConfig, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := clustersetip.New(restConfig, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	g.Expect(err).NotTo(HaveOccurred())
	key := types.NamespacedName{Namespace: "default", Name: "gone"}
	g.Expect(w.Write(ctx, key, []string{"10.96.0.10"})).To(Succeed())
	err = c.Get(ctx, key, &mcsv1.ServiceImport{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ServiceImport is there after the writer's apply: %v", err)
}
