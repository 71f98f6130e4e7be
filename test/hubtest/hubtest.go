package hubtest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers"
	"github.com/straitnet/strait/dns/prints"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/daemonbuild"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/freeport"
	"github.com/straitnet/strait/webhook"
)

// WebhookConfigName is the ValidatingWebhookConfiguration ServeWebhook creates, the
// name kustomize/hub gives it.
const WebhookConfigName = "strait-hub"

// ServeWebhook serves the ClusterSet webhook from this process on a free loopback port
// and registers it on env's hub with failurePolicy Fail and sideEffects None, so that
// creates, updates and server-side dry runs of ClusterSets are judged by it. It returns
// once the hub's API server can reach it; stop unregisters it and stops the server.
func ServeWebhook(ctx context.Context, env *clusters.Env) (stop func(), retErr error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	defer func() {
		if retErr != nil {
			stop()
		}
	}()
	port, err := freeport.Port()
	if err != nil {
		return stop, err
	}
	certDir, err := os.MkdirTemp("", "strait-hubtest-webhook-")
	if err != nil {
		return stop, err
	}
	stops = append(stops, func() { _ = os.RemoveAll(certDir) })

	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	scope := admissionregistrationv1.NamespacedScope
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, webhook.ValidatePath)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "clustersets.strait.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{straitv1.GroupVersion.Group}, APIVersions: []string{straitv1.GroupVersion.Version},
					Resources: []string{"clustersets"}, Scope: &scope},
			}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if err := env.Hub.Client.Create(ctx, vwc); err != nil {
		return stop, fmt.Errorf("registering the webhook: %w", err)
	}
	stops = append(stops, func() { _ = env.Hub.Client.Delete(context.Background(), vwc) })

	rotator := webhook.NewCertRotator(env.Hub.Client, webhook.CertOptions{
		Secret:               types.NamespacedName{Namespace: env.HubNamespace, Name: "strait-hub-webhook-cert"},
		WebhookConfiguration: WebhookConfigName,
		DNSNames:             []string{"localhost"},
		IPs:                  []net.IP{net.ParseIP("127.0.0.1")},
		CertDir:              certDir,
	})
	if err := rotator.Ensure(ctx); err != nil {
		return stop, fmt.Errorf("webhook certificate: %w", err)
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
	if err := webhook.SetupWithManager(mgr); err != nil {
		return stop, err
	}
	stops = append(stops, startManager(mgr))
	return stop, waitServing(port, 20*time.Second)
}

// RunController runs the ClusterSet reconciler against env's hub, as `straitd hub` does,
// probing members every probe, its metrics registered in reg (a test that reads them
// as a scrape would passes a registry it gathers; nil registers them in a fresh one).
// stop stops it and waits for it to end.
func RunController(env *clusters.Env, probe time.Duration, reg prometheus.Registerer) (stop func(), err error) {
	return RunControllerWith(env, probe, reg, nil)
}

// RunControllerWith is RunController with setup, when not nil, handed the reconciler
// before it starts: a test of package controllers sets there what only tests set (its
// benchmark's stand-in members).
func RunControllerWith(env *clusters.Env, probe time.Duration, reg prometheus.Registerer, setup func(*controllers.ClusterSetReconciler)) (stop func(), err error) {
	// The client as straitd hub makes it (cli.RESTConfig), not envtest's 1,000 a second.
	cfg := rest.CopyConfig(env.Hub.Config)
	cfg.QPS, cfg.Burst = 0, 0
	cli.Unthrottled(cfg)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr(true)},
	})
	if err != nil {
		return nil, err
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	metrics, err := controllers.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	// This process's build in status.hub, as straitd hub puts its own.
	self := daemonbuild.Self(straitv1.DaemonHub, "", "hubtest", time.Now())
	r := controllers.NewClusterSetReconciler(mgr, metrics, controllers.Config{ProbeInterval: probe, RetryInterval: 5 * time.Second, Self: &self})
	if setup != nil {
		setup(r)
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	stopReports := runReporters(env)
	stopHub := startManager(mgr)
	return func() { stopHub(); stopReports() }, nil
}

// runReporters runs, for each member, what strait dns runs there for the hub: the
// report of the hub's objects the hub does not watch (dns/prints) in the Membership's
// status.prints.
func runReporters(env *clusters.Env) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, m := range env.Members {
		wg.Go(func() {
			if err := prints.Run(ctx, m.Config, prints.Options{Log: ctrl.Log.WithName("prints").WithValues("member", m.Name)}); err != nil {
				ctrl.Log.Error(err, "the member's report did not start", "member", m.Name)
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}

func startManager(mgr ctrl.Manager) func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = mgr.Start(ctx); close(done) }()
	return func() { cancel(); <-done }
}

func waitServing(port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // readiness only
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook server not serving: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }

// ServeHub runs the webhook and the hub controller against env's hub and writes the
// hub's kubeconfig to a file of its own, as a user of `strait diff` or `strait show`
// holds it. stop undoes all of it, also after an error.
func ServeHub(ctx context.Context, env *clusters.Env) (hubKubeconfig string, stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	stopWebhook, err := ServeWebhook(ctx, env)
	if stopWebhook != nil {
		stops = append(stops, stopWebhook)
	}
	if err != nil {
		return "", stop, err
	}
	stopHub, err := RunController(env, time.Second, nil)
	if stopHub != nil {
		stops = append(stops, stopHub)
	}
	if err != nil {
		return "", stop, err
	}
	dir, err := os.MkdirTemp("", "strait-hub-")
	if err != nil {
		return "", stop, err
	}
	stops = append(stops, func() { _ = os.RemoveAll(dir) })
	hubKubeconfig = filepath.Join(dir, "hub.kubeconfig")
	return hubKubeconfig, stop, os.WriteFile(hubKubeconfig, env.Hub.KubeConfig, 0o600)
}
