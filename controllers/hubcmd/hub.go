package hubcmd

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/daemonbuild"
	"github.com/straitnet/strait/internal/exemplar"
	"github.com/straitnet/strait/internal/kubewatch"
	"github.com/straitnet/strait/internal/scheme"
	"github.com/straitnet/strait/webhook"
)

type hubOptions struct {
	kubeconfig        string
	namespace         string
	watchNamespace    string
	metricsAddr       string
	probeAddr         string
	leaderElect       bool
	webhookCerts      string
	webhookPort       int
	webhookCertDir    string
	webhookService    string
	webhookConfig     string
	memberProbe       time.Duration
	retryInterval     time.Duration
	concurrentMembers int
	logLevel          string
	logJSON           bool
}

// NewCommand is `straitd hub`.
func NewCommand() *cobra.Command {
	o := &hubOptions{}
	cmd := &cobra.Command{
		Use:   "hub",
		Short: "Run the hub: the ClusterSet controller and its validating webhook",
		Long: `hub runs in the hub cluster. For every ClusterSet it connects to the member clusters
named by their kubeconfig Secrets, reads what they hold (gateways, exported services and
their endpoints, ServiceExports), computes every member's objects and server-side applies
them with the field manager "strait-hub", prunes what is no longer wanted, and reports
per-cluster and per-export status with Ready/Reconciling/Stalled conditions.

It also serves the validating webhook for ClusterSets. With --webhook-certs=self (the
default) it issues its own CA and serving certificate, keeps them in the Secret
<webhook-service>-cert, renews them, and injects the CA into the
ValidatingWebhookConfiguration; with --webhook-certs=external the certificate comes from
cert-manager (or anything that fills --webhook-cert-dir); --webhook-certs=none serves no
webhook.

Several replicas can run; one leads (--leader-elect), all serve the webhook.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runHub(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the hub cluster (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&o.namespace, "namespace", podNamespace(), "the hub's own namespace: leader election, webhook certificate Secret")
	f.StringVar(&o.watchNamespace, "watch-namespace", "", "only reconcile ClusterSets in this namespace (default: all namespaces)")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus /metrics endpoint; 0 turns it off")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 turns them off")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "elect one active replica through a Lease in --namespace")
	f.StringVar(&o.webhookCerts, "webhook-certs", "self", "webhook certificates: self (issued and rotated by the hub), external (e.g. cert-manager) or none (no webhook)")
	f.IntVar(&o.webhookPort, "webhook-port", 9443, "port the webhook listens on")
	f.StringVar(&o.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs", "directory of the webhook's tls.crt and tls.key")
	f.StringVar(&o.webhookService, "webhook-service", "strait-hub-webhook", "Service in --namespace that fronts the webhook (names in the certificate)")
	f.StringVar(&o.webhookConfig, "webhook-configuration", "strait-hub", "ValidatingWebhookConfiguration whose caBundle the hub keeps (with --webhook-certs=self)")
	f.DurationVar(&o.memberProbe, "member-probe-interval", 5*time.Second, "how often each member's API server is health-checked")
	f.DurationVar(&o.retryInterval, "retry-interval", 30*time.Second, "when a ClusterSet with unreachable or failing members is retried")
	f.IntVar(&o.concurrentMembers, "max-concurrent-members", controllers.DefaultMaxConcurrentMembers, "members written in parallel within one reconcile (full passes over members: a quarter of it)")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info or error")
	f.BoolVar(&o.logJSON, "log-json", true, "log JSON lines (false: human-readable)")
	return cmd
}

// podNamespace is the namespace the hub's pod runs in (the Downward API's
// POD_NAMESPACE), else strait-system.
func podNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return straitv1.SystemNamespace
}

func runHub(ctx context.Context, o *hubOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	lvl, err := zapcore.ParseLevel(o.logLevel)
	if err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(!o.logJSON), zap.Level(lvl)))
	switch o.webhookCerts {
	case "self", "external", "none":
	default:
		return fmt.Errorf("--webhook-certs must be self, external or none, not %q", o.webhookCerts)
	}
	cfg, err := cli.RESTConfig(o.kubeconfig, "strait-hub")
	if err != nil {
		return err
	}
	kinds := scheme.New()
	opts := ctrl.Options{
		Scheme:                        kinds,
		Metrics:                       metricsserver.Options{BindAddress: o.metricsAddr, HandlerOpts: []func(*promhttp.HandlerOpts){exemplar.OpenMetrics}},
		HealthProbeBindAddress:        o.probeAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              "strait-hub.strait.io",
		LeaderElectionNamespace:       o.namespace,
		LeaderElectionReleaseOnCancel: true,
	}
	// The hub's API server that comes back is followed within seconds (kubewatch).
	opts.Cache = cache.Options{NewInformer: kubewatch.NewSharedIndexInformer}
	if o.watchNamespace != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{o.watchNamespace: {}}
	}
	if o.webhookCerts != "none" {
		opts.WebhookServer = crwebhook.NewServer(crwebhook.Options{Port: o.webhookPort, CertDir: o.webhookCertDir})
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	m, err := controllers.NewMetrics(metrics.Registry)
	if err != nil {
		return err
	}
	// The pod's hostname is its name.
	pod, _ := os.Hostname()
	self := daemonbuild.Self(straitv1.DaemonHub, os.Getenv("NODE_NAME"), pod, time.Now())
	r := controllers.NewClusterSetReconciler(mgr, m, controllers.Config{
		RetryInterval: o.retryInterval, ProbeInterval: o.memberProbe, MaxConcurrentMembers: o.concurrentMembers,
		Self: &self})
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the ClusterSet controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if o.webhookCerts != "none" {
		if o.webhookCerts == "self" {
			if err := startCertRotation(ctx, mgr, cfg, o); err != nil {
				return err
			}
		}
		if err := webhook.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the webhook: %w", err)
		}
		if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
			return err
		}
	} else if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// startCertRotation issues the webhook certificate before the webhook server starts
// (it reads the files once at start) and keeps it fresh afterwards.
func startCertRotation(ctx context.Context, mgr ctrl.Manager, cfg *rest.Config, o *hubOptions) error {
	c, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	svc := o.webhookService + "." + o.namespace
	rot := webhook.NewCertRotator(c, webhook.CertOptions{
		Secret:               types.NamespacedName{Namespace: o.namespace, Name: o.webhookService + "-cert"},
		WebhookConfiguration: o.webhookConfig,
		DNSNames:             []string{svc + ".svc", svc + ".svc.cluster.local", svc, o.webhookService},
		IPs:                  []net.IP{net.ParseIP("127.0.0.1")},
		CertDir:              o.webhookCertDir,
		Log:                  mgr.GetLogger().WithName("webhook-certs"),
	})
	if err := metrics.Registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "strait_hub_webhook_certificate_expiry_timestamp_seconds",
		Help: "When the webhook's serving certificate this replica serves expires (Unix time; renewed when a third of its life is left).",
	}, func() float64 {
		if e := rot.Expiry(); !e.IsZero() {
			return float64(e.Unix())
		}
		return 0
	})); err != nil {
		return err
	}
	ensure := func() error { return rot.Ensure(ctx) }
	if err := retryTransient(ctx, mgr.GetLogger(), "issuing the webhook certificate", time.Minute, ensure); err != nil {
		return fmt.Errorf("issuing the webhook certificate: %w", err)
	}
	return mgr.Add(rot)
}
