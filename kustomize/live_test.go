package kustomize

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/clusters"
)

// applyAll server-side applies objects (CRDs are already installed by envtest).
func applyAll(t *testing.T, c client.Client, objs []*unstructured.Unstructured, opts ...client.ApplyOption) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		all := append([]client.ApplyOption{client.FieldOwner("kubectl"), client.ForceOwnership}, opts...)
		if err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(o.DeepCopy()), all...); err != nil {
			t.Fatalf("applying %s: %v", id(o.GetKind(), o.GetNamespace(), o.GetName()), err)
		}
	}
}

// The manifests are accepted by a real API server, and the hub converges a member
// through the member's least-privilege role alone: it writes and prunes everything it
// must, copies the PSK, and still cannot read any other Secret.
func TestHubWorksWithTheMemberRole(t *testing.T) {
	if testing.Short() {
		t.Skip("needs kube-apiservers (run without -short)")
	}
	g := NewWithT(t)
	ctx := context.Background()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	env, err := clusters.Start(ctx, clusters.Options{
		Members: []string{"c1"},
		// The member's kubeconfig authenticates as the ServiceAccount kustomize/member
		// makes for the hub, nothing more.
		MemberUser: &envtest.User{Name: "system:serviceaccount:strait-system:strait-hub-access",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:strait-system", "system:authenticated"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	c1 := env.Member("c1")

	hubObjs := build(t, "hub")
	var noWebhook []*unstructured.Unstructured
	for _, o := range hubObjs {
		if o.GetKind() == "ValidatingWebhookConfiguration" {
			// Accepted, but not installed: nothing serves it in this test.
			applyAll(t, env.Hub.Client, []*unstructured.Unstructured{o}, client.DryRunAll)
			continue
		}
		noWebhook = append(noWebhook, o)
	}
	applyAll(t, env.Hub.Client, noWebhook)
	applyAll(t, c1.Client, build(t, "member"))

	stop := runHub(t, env)
	t.Cleanup(stop)

	// A service to export, and the PSK.
	mustCreate(t, c1.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	mustCreate(t, c1.Client, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "cart", Namespace: "shop"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.40", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}})
	mustCreate(t, c1.Client, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "cart-x", Namespace: "shop",
		Labels: map[string]string{discoveryv1.LabelServiceName: "cart"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.0.40"}}}})
	mustCreate(t, env.Hub.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "psk", Namespace: env.HubNamespace},
		Data: map[string][]byte{"psk": []byte("pre-shared-key-of-the-clusterset")}})
	cs := &straitv1.ClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: "prod", Namespace: env.HubNamespace},
		Spec: straitv1.ClusterSetSpec{
			Clusters: []straitv1.ClusterSpec{{Name: "c1", PodCIDRs: []string{"10.1.0.0/16"}, ServiceCIDRs: []string{"10.101.0.0/16"},
				KubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: c1.KubeConfigSecret}}}},
			Cable:   straitv1.CableSpec{Driver: straitv1.CableIPsec, PSKSecretRef: &meta.LocalObjectReference{Name: "psk"}},
			Exports: []straitv1.ExportSpec{{Namespace: "shop", Name: "cart"}, {Namespace: "billing", Name: "api"}},
		},
	}
	mustCreate(t, env.Hub.Client, cs)
	g.Eventually(func(g Gomega) {
		cur := &straitv1.ClusterSet{}
		g.Expect(env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(cs), cur)).To(Succeed())
		ready := apimeta.FindStatusCondition(cur.Status.Conditions, meta.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %+v", ready.Message, cur.Status.Clusters)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(c1.Client.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "cart"}, &mcsv1.ServiceImport{})).To(Succeed())
	g.Expect(c1.Client.Get(ctx, types.NamespacedName{Name: "billing"}, &corev1.Namespace{})).To(Succeed(), "namespace created for the export")
	g.Expect(c1.Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: plan.IPsecPSKSecretName}, &corev1.Secret{})).To(Succeed())

	// The hub's identity reads no other Secret.
	asHub, err := clientFromKubeConfig(c1.KubeConfig, env)
	g.Expect(err).NotTo(HaveOccurred())
	err = asHub.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "strait-hub-access-token"}, &corev1.Secret{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
	g.Expect(apierrors.IsForbidden(asHub.List(ctx, &corev1.SecretList{}, client.InNamespace(straitv1.SystemNamespace)))).To(BeTrue())

	// Deleting the ClusterSet prunes everything, the PSK too, through the same role.
	g.Expect(env.Hub.Client.Delete(ctx, cs)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(cs), &straitv1.ClusterSet{}))
	}, 30*time.Second, 200*time.Millisecond).Should(BeTrue())
	g.Expect(apierrors.IsNotFound(c1.Client.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: plan.IPsecPSKSecretName}, &corev1.Secret{}))).To(BeTrue())
	g.Expect(apierrors.IsNotFound(c1.Client.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "cart"}, &mcsv1.ServiceImport{}))).To(BeTrue())
}

func mustCreate(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func clientFromKubeConfig(kc []byte, env *clusters.Env) (client.Client, error) {
	cfg, err := clientcmdRESTConfig(kc)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: env.Scheme})
}

func runHub(t *testing.T, env *clusters.Env) func() {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Hub.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := controllers.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r := controllers.NewClusterSetReconciler(mgr, m, controllers.Config{ProbeInterval: time.Second, RetryInterval: 3 * time.Second})
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = mgr.Start(ctx); close(done) }()
	return func() { cancel(); <-done }
}

func ptr[T any](v T) *T { return &v }

func clientcmdRESTConfig(kc []byte) (*rest.Config, error) {
	return clientcmd.RESTConfigFromKubeConfig(kc)
}
