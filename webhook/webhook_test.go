package webhook

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	"go.uber.org/zap/zapcore"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/freeport"
)

// env is a hub API server with this package's webhook served to it, started once.
var (
	env      *clusters.Env
	rotator  *CertRotator
	certDir  string
	startErr error
)

const webhookConfigName = "strait-hub"

func TestMain(m *testing.M) {
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	code := func() int {
		if testing.Short() {
			return m.Run()
		}
		stop, err := start()
		if err != nil {
			startErr = err
		}
		if stop != nil {
			defer stop()
		}
		return m.Run()
	}()
	os.Exit(code)
}

func needHub(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a kube-apiserver (run without -short)")
	}
	if startErr != nil {
		t.Fatalf("starting the hub: %v", startErr)
	}
}

// start runs a hub API server, registers the webhook configuration the way
// kustomize/hub does (but with a URL, as the webhook runs in this process), lets the
// rotator issue the certificate and inject the caBundle, and serves the webhook.
func start() (func(), error) {
	ctx := context.Background()
	var err error
	env, err = clusters.Start(ctx, clusters.Options{})
	if err != nil {
		return nil, err
	}
	stops := []func(){func() { _ = env.Stop() }}
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	port, err := freeport.Port()
	if err != nil {
		return stop, err
	}
	if certDir, err = os.MkdirTemp("", "strait-webhook-"); err != nil {
		return stop, err
	}
	stops = append(stops, func() { _ = os.RemoveAll(certDir) })

	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, ValidatePath)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: webhookConfigName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "clustersets.strait.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules:                   []admissionregistrationv1.RuleWithOperations{clusterSetRule()},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := env.Hub.Client.Create(ctx, vwc); err != nil {
		return stop, err
	}
	rotator = NewCertRotator(env.Hub.Client, CertOptions{
		Secret:               types.NamespacedName{Namespace: env.HubNamespace, Name: "strait-hub-webhook-cert"},
		WebhookConfiguration: webhookConfigName,
		DNSNames:             []string{"strait-hub-webhook.strait-system.svc", "localhost"},
		IPs:                  []net.IP{net.ParseIP("127.0.0.1")},
		CertDir:              certDir,
	})
	if err := rotator.Ensure(ctx); err != nil {
		return stop, err
	}
	mgr, err := ctrl.NewManager(env.Hub.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          crwebhook.NewServer(crwebhook.Options{Host: "127.0.0.1", Port: port, CertDir: certDir}),
		Controller:             config.Controller{SkipNameValidation: ptr(true)},
	})
	if err != nil {
		return stop, err
	}
	if err := SetupWithManager(mgr); err != nil {
		return stop, err
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = mgr.Start(mctx); close(done) }()
	stops = append(stops, func() { cancel(); <-done })
	// Serving: the TLS handshake with the injected CA works.
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // readiness only
		if err == nil {
			_ = conn.Close()
			break
		}
		if time.Now().After(deadline) {
			return stop, fmt.Errorf("webhook server not serving: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return stop, nil
}

func clusterSetRule() admissionregistrationv1.RuleWithOperations {
	scope := admissionregistrationv1.NamespacedScope
	return admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{straitv1.GroupVersion.Group}, APIVersions: []string{straitv1.GroupVersion.Version},
			Resources: []string{"clustersets"}, Scope: &scope},
	}
}

func ptr[T any](v T) *T { return &v }

func clusterSet(name string) *straitv1.ClusterSet {
	return &straitv1.ClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: env.HubNamespace},
		Spec: straitv1.ClusterSetSpec{Clusters: []straitv1.ClusterSpec{
			{Name: "c1", KubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "c1-kubeconfig"}},
				PodCIDRs: []string{"10.1.0.0/16"}, ServiceCIDRs: []string{"10.101.0.0/16"}},
			{Name: "c2", KubeConfig: &meta.KubeConfigReference{SecretRef: &meta.SecretKeyReference{Name: "c2-kubeconfig"}},
				PodCIDRs: []string{"10.2.0.0/16"}, ServiceCIDRs: []string{"10.102.0.0/16"}},
		}},
	}
}

// The real API server sends the ClusterSet to the webhook and refuses an invalid one
// with the validator's message, naming the field, both clusters and the CIDRs.
func TestInvalidClusterSetIsRefused(t *testing.T) {
	needHub(t)
	g := NewWithT(t)
	ctx := context.Background()
	cs := clusterSet("overlap")
	cs.Spec.Clusters[1].PodCIDRs = []string{"10.1.128.0/17"}
	err := env.Hub.Client.Create(ctx, cs)
	g.Expect(err).To(HaveOccurred())
	g.Expect(apierrors.IsInvalid(err) || apierrors.IsForbidden(err)).To(BeTrue(), "error: %v", err)
	g.Expect(err.Error()).To(And(
		ContainSubstring(`admission webhook "clustersets.strait.io" denied the request`),
		ContainSubstring("spec.clusters[1].podCIDRs[0]"),
		ContainSubstring("clusters c1 and c2 overlap"),
		ContainSubstring("10.1.128.0/17"), ContainSubstring("10.1.0.0/16")))
	g.Expect(apierrors.IsNotFound(env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(cs), &straitv1.ClusterSet{}))).To(BeTrue())

	// A server-side dry run (kubectl apply --dry-run=server, kubectl diff) is answered
	// too, because the webhook declares no side effects.
	err = env.Hub.Client.Create(ctx, cs, client.DryRunAll)
	g.Expect(err).To(MatchError(ContainSubstring("clusters c1 and c2 overlap")))
}

// A valid ClusterSet passes a server-side dry run without being stored, then is created;
// an update that breaks it is refused and the stored object stays as it was.
func TestValidClusterSetDryRunAndUpdate(t *testing.T) {
	needHub(t)
	g := NewWithT(t)
	ctx := context.Background()
	cs := clusterSet("valid")
	g.Expect(env.Hub.Client.Create(ctx, cs.DeepCopy(), client.DryRunAll)).To(Succeed())
	g.Expect(apierrors.IsNotFound(env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(cs), &straitv1.ClusterSet{}))).To(BeTrue())

	g.Expect(env.Hub.Client.Create(ctx, cs)).To(Succeed())
	t.Cleanup(func() { _ = env.Hub.Client.Delete(ctx, cs) })

	broken := cs.DeepCopy()
	broken.Spec.Exports = []straitv1.ExportSpec{{Namespace: "shop", Name: "cart", Clusters: []string{"c9"}}}
	err := env.Hub.Client.Update(ctx, broken)
	g.Expect(err).To(MatchError(And(ContainSubstring("spec.exports[0].clusters"), ContainSubstring("c9"))))
	cur := &straitv1.ClusterSet{}
	g.Expect(env.Hub.Client.Get(ctx, client.ObjectKeyFromObject(cs), cur)).To(Succeed())
	g.Expect(cur.Spec.Exports).To(BeEmpty())
}

// The rotator stored its CA and serving certificate in a Secret and injected the CA
// into the webhook configuration; near expiry it issues a new serving certificate that
// the running server picks up, and a second replica reuses what the Secret holds.
func TestCertificatesAreInjectedAndRotated(t *testing.T) {
	needHub(t)
	g := NewWithT(t)
	ctx := context.Background()
	sec := &corev1.Secret{}
	g.Expect(env.Hub.Client.Get(ctx, rotator.opts.Secret, sec)).To(Succeed())
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	g.Expect(env.Hub.Client.Get(ctx, types.NamespacedName{Name: webhookConfigName}, vwc)).To(Succeed())
	g.Expect(vwc.Webhooks[0].ClientConfig.CABundle).To(Equal(sec.Data["ca.crt"]))

	// Another replica with the same options changes nothing.
	other := NewCertRotator(env.Hub.Client, rotator.opts)
	other.opts.CertDir = t.TempDir()
	g.Expect(other.Ensure(ctx)).To(Succeed())
	again := &corev1.Secret{}
	g.Expect(env.Hub.Client.Get(ctx, rotator.opts.Secret, again)).To(Succeed())
	g.Expect(again.ResourceVersion).To(Equal(sec.ResourceVersion))
	// What strait_hub_webhook_certificate_expiry_timestamp_seconds reports: a year ahead.
	g.Expect(other.Expiry()).To(BeTemporally("~", time.Now().Add(365*24*time.Hour), 48*time.Hour))

	// Eleven months later the serving certificate has less than a third of its life
	// left: a new one is issued from the same CA and written where the server reads it.
	later := NewCertRotator(env.Hub.Client, rotator.opts)
	later.now = func() time.Time { return time.Now().Add(330 * 24 * time.Hour) }
	g.Expect(later.Ensure(ctx)).To(Succeed())
	rotated := &corev1.Secret{}
	g.Expect(env.Hub.Client.Get(ctx, rotator.opts.Secret, rotated)).To(Succeed())
	g.Expect(rotated.Data[corev1.TLSCertKey]).NotTo(Equal(sec.Data[corev1.TLSCertKey]))
	g.Expect(rotated.Data["ca.crt"]).To(Equal(sec.Data["ca.crt"]))
	onDisk, err := os.ReadFile(certDir + "/tls.crt")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(onDisk).To(Equal(rotated.Data[corev1.TLSCertKey]))
	g.Expect(later.Expiry()).To(BeTemporally("~", time.Now().Add(330*24*time.Hour+365*24*time.Hour), 48*time.Hour))

	// The API server still reaches the webhook with the new certificate.
	cs := clusterSet("after-rotation")
	cs.Spec.Clusters[1].ServiceCIDRs = cs.Spec.Clusters[0].ServiceCIDRs
	g.Eventually(func() error { return env.Hub.Client.Create(ctx, cs, client.DryRunAll) }, 10*time.Second, 200*time.Millisecond).
		Should(MatchError(ContainSubstring("overlap")))
}

// TestWebhookConfigurationAppliedAfterTheHub: GitOps may apply the webhook configuration
// after the hub has started. Ensure does not fail for that (the hub would crash-loop),
// and the rotator injects the CA once the configuration appears.
func TestWebhookConfigurationAppliedAfterTheHub(t *testing.T) {
	needHub(t)
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := rotator.opts
	opts.WebhookConfiguration = "strait-hub-applied-later"
	opts.CertDir = t.TempDir()
	opts.RetryInterval = 100 * time.Millisecond
	late := NewCertRotator(env.Hub.Client, opts)
	g.Expect(late.Ensure(ctx)).To(Succeed())
	g.Expect(filepath.Join(opts.CertDir, "tls.crt")).To(BeAnExistingFile())
	done := make(chan error)
	go func() { done <- late.Start(ctx) }()

	ignore, none := admissionregistrationv1.Ignore, admissionregistrationv1.SideEffectClassNone
	url := "https://127.0.0.1:1/never-called" // no rules: the API server never calls it
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: opts.WebhookConfiguration},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "late.strait.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			FailurePolicy:           &ignore,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	g.Expect(env.Hub.Client.Create(ctx, vwc)).To(Succeed())
	defer func() { _ = env.Hub.Client.Delete(context.Background(), vwc) }()
	sec := &corev1.Secret{}
	g.Expect(env.Hub.Client.Get(ctx, opts.Secret, sec)).To(Succeed())
	g.Eventually(func() []byte {
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Hub.Client.Get(ctx, types.NamespacedName{Name: vwc.Name}, got); err != nil {
			return nil
		}
		return got.Webhooks[0].ClientConfig.CABundle
	}, 10*time.Second, 100*time.Millisecond).Should(Equal(sec.Data["ca.crt"]))
	cancel()
	g.Expect(<-done).To(Succeed())
}
