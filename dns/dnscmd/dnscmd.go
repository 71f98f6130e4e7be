package dnscmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/clustersetip"
	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/dns/prints"
	"github.com/straitnet/strait/dns/resolver"
	"github.com/straitnet/strait/dns/server"
	"github.com/straitnet/strait/dns/source"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/daemonbuild"
)

type dnsOptions struct {
	listen         string
	udpSockets     int
	zones          []string
	ttl            int
	clusterNames   bool
	clusterID      string
	kubeconfig     string
	namespace      string
	metricsAddr    string
	coredns        bool
	corednsCM      string
	service        string
	upstream       string
	corednsResync  time.Duration
	cleanup        bool
	clusterSetIPs  bool
	publishBuild   bool
	reportPrints   bool
	changedTTL     bool
	changedCluster bool
}

// NewCommand is `straitd dns`.
func NewCommand() *cobra.Command {
	o := &dnsOptions{}
	cmd := &cobra.Command{
		Use:   "dns [flags]",
		Short: "Serve <svc>.<ns>.svc.clusterset.local for this member (daemon)",
		Long: `dns answers the clusterset.local zone (and extra zones) from this member's
ServiceImports and MCS EndpointSlices, as the MCS DNS specification describes:

  <svc>.<ns>.svc.clusterset.local                       A/AAAA: the clusterset IP
      (spec.dns.serviceAnswer LocalFirst: the local cluster's address when its export
      is ready, else round-robin over connected clusters); SRV: one per port
  <cluster>.<svc>.<ns>.svc.clusterset.local             one cluster (--cluster-names)
  <hostname>.<cluster>.<svc>.<ns>.svc.clusterset.local  one headless endpoint
  _<port>._<proto>.<svc>.<ns>.svc.clusterset.local      SRV for named ports
  dns-version.clusterset.local                          TXT "1.0.0"

With --clusterset-ips (the default) it also writes each ClusterSetIP ServiceImport's
spec.ips: the cluster IP of the Service the hub derived from the import, which kube-proxy
balances over every exporting cluster's ready endpoints.

Names of a service without a ready endpoint in a connected cluster are NXDOMAIN; names
outside the zones are REFUSED. A remote cluster is connected while its Peer in
strait-system has no Connected=False condition.

With --report-prints (the default) it keeps the Membership's status.prints: per
ClusterSet and kind, the count and fingerprint sum of the ServiceImports, Services,
EndpointSlices and Peers the hub wrote into this member (app.kubernetes.io/managed-by:
strait-hub), which the hub compares with its record of its writes instead of watching
them; and status.connections, the summary of the Peers' connections (how many have a
state, how many are Connected, the first 32), which the hub shows in the ClusterSet's
status. It holds a fingerprint an object, not the object. A change of latency alone is
written at most every 30 s. Every replica writes the same values under one field
manager (strait-dns-prints).

Zones, TTL and cluster names come from the Membership's spec.dns; flags given here win.
With --coredns (the default) it keeps a marked server block in the Corefile of
kube-system/coredns that forwards the zones to the strait dns Service, and puts it back
when it goes missing; everything else in the Corefile stays byte for byte.
'straitd dns --cleanup' removes that block and exits (for uninstall).

Metrics (Prometheus) and /healthz, /readyz are served on --metrics-addr.`,
		Example: `  straitd dns --listen :53
  straitd dns --listen 127.0.0.1:5353 --kubeconfig ~/.kube/c1 --coredns=false
  straitd dns --cleanup`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.changedTTL = cmd.Flags().Changed("ttl")
			o.changedCluster = cmd.Flags().Changed("cluster-names")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runDNS(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", ":53", "address to answer on, UDP and TCP")
	f.IntVar(&o.udpSockets, "udp-sockets", runtime.GOMAXPROCS(0), "UDP sockets bound to the port with SO_REUSEPORT (the kernel spreads queries over them)")
	f.StringSliceVar(&o.zones, "zones", nil, "extra zones to serve besides clusterset.local and the Membership's (repeatable)")
	f.IntVar(&o.ttl, "ttl", resolver.DefaultTTL, "TTL of answers in seconds; when not given, the Membership's spec.dns.ttlSeconds (5 if unset)")
	f.BoolVar(&o.clusterNames, "cluster-names", true, "serve <cluster>.<svc>.<ns>.svc.<zone>; false for strict MCS conformance; when not given, the Membership's spec.dns.disableClusterNames decides")
	f.StringVar(&o.clusterID, "cluster-id", "", "this cluster's ID (default: the Membership's spec.clusterID)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of this member (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	f.StringVar(&o.namespace, "namespace", straitv1.SystemNamespace, "namespace of the Membership and the Peers")
	f.StringVar(&o.metricsAddr, "metrics-addr", ":9253", "address for /metrics, /healthz and /readyz; empty turns it off")
	f.BoolVar(&o.coredns, "coredns", true, "keep the forwarding block in CoreDNS's Corefile")
	f.StringVar(&o.corednsCM, "coredns-configmap", "kube-system/coredns", "namespace/name of CoreDNS's ConfigMap")
	f.StringVar(&o.service, "service", straitv1.SystemNamespace+"/strait-dns", "namespace/name of the Service in front of strait dns; CoreDNS forwards to its cluster IP, port 53")
	f.StringVar(&o.upstream, "upstream", "", "address CoreDNS forwards to, IP:port (default: the --service cluster IP)")
	f.DurationVar(&o.corednsResync, "coredns-resync", time.Minute, "how often the Corefile block is checked and put back")
	f.BoolVar(&o.cleanup, "cleanup", false, "remove the block from CoreDNS's Corefile and exit")
	f.BoolVar(&o.clusterSetIPs, "clusterset-ips", true, "write the cluster IP of each ClusterSetIP import's derived Service into the ServiceImport's spec.ips")
	f.BoolVar(&o.reportPrints, "report-prints", true, "keep the Membership's status.prints (the count and fingerprint sum of the hub's ServiceImports, Services, EndpointSlices and Peers in this member, per ClusterSet and kind) and status.connections (the summary of the Peers' connections)")
	f.BoolVar(&o.publishBuild, "publish-build", true, "keep this server's build in the Membership's status.daemons (what strait version reads), under its pod name (the hostname)")
	return cmd
}

func runDNS(ctx context.Context, o *dnsOptions) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
	cm, err := namespacedName(o.corednsCM)
	if err != nil {
		return fmt.Errorf("--coredns-configmap: %w", err)
	}
	if _, err := namespacedName(o.service); err != nil {
		return fmt.Errorf("--service: %w", err)
	}
	if o.changedTTL && o.ttl < 0 {
		return fmt.Errorf("--ttl %d: must not be negative", o.ttl)
	}
	cfg, err := cli.RESTConfig(o.kubeconfig, "strait-dns")
	if err != nil {
		return err
	}
	// A client for the Corefile's ConfigMap and strait dns's Service, when they are
	// looked after: the answers come from the source's own watches.
	var k8s client.Client
	if o.coredns || o.cleanup {
		if k8s, err = corefile.NewClient(cfg); err != nil {
			return err
		}
	}
	if o.cleanup {
		changed, err := corefile.Cleanup(ctx, k8s, cm)
		if err != nil {
			return err
		}
		log.Info("corefile cleaned up", "configmap", cm.String(), "changed", changed)
		return nil
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics, err := server.NewMetrics(reg)
	if err != nil {
		return err
	}
	srv := server.New(server.Options{Addr: o.listen, UDPSockets: o.udpSockets}, metrics)
	ov := source.Overrides{ExtraZones: o.zones, ClusterID: o.clusterID}
	if o.changedTTL {
		ttl := uint32(o.ttl)
		ov.TTL = &ttl
	}
	if o.changedCluster {
		ov.ClusterNames = &o.clusterNames
	}
	setGCPercent(log)
	// The clusterset IPs' writer reads the imports from the snapshots the server answers
	// from: strait dns holds one copy of them.
	publish := srv.Publish
	var writer *clustersetip.Writer
	if o.clusterSetIPs {
		if writer, err = clustersetip.New(cfg, log); err != nil {
			return err
		}
		publish = func(snap *resolver.Snapshot) {
			srv.Publish(snap)
			writer.Observe(snap)
		}
	}
	src, err := source.New(cfg, source.Options{Overrides: ov, Namespace: o.namespace,
		OnError: func(err error) { log.Error("taking in an object", "err", err) },
		OnListWatchError: func(resource string, err error) {
			metrics.SourceError(resource)
			log.Error("listing or watching", "resource", resource, "err", err)
		},
		OnServed: metrics.Propagated,
	}, publishFirstThenFree(publish))
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 6)
	run := func(name string, f func() error) {
		go func() {
			if err := f(); err != nil {
				errc <- fmt.Errorf("%s: %w", name, err)
				return
			}
			errc <- nil
		}()
	}
	n := 2
	run("source", func() error { return src.Run(ctx) })
	run("server", func() error {
		return srv.Run(ctx, func(udp, tcp net.Addr) { log.Info("serving", "udp", udp.String(), "tcp", tcp.String()) })
	})
	if o.metricsAddr != "" {
		n++
		run("metrics", func() error { return serveMetrics(ctx, o.metricsAddr, reg, srv) })
	}
	if writer != nil {
		n++
		run("clusterset-ips", func() error { return writer.Run(ctx) })
	}
	if o.publishBuild {
		n++
		svc, _ := namespacedName(o.service) // checked above
		run("build", func() error { return keepBuild(ctx, cfg, o.namespace, svc, log) })
	}
	if o.reportPrints {
		n++
		run("prints", func() error {
			return prints.Run(ctx, cfg, prints.Options{Namespace: o.namespace, Log: logr.FromSlogHandler(log.Handler()).WithName("prints")})
		})
	}
	if o.coredns {
		n++
		svc, _ := namespacedName(o.service) // checked above
		keeper := corefile.Keeper{Client: k8s, ConfigMap: cm, Service: svc, Upstream: o.upstream,
			Resync: o.corednsResync, Zones: servedZones(srv), Left: leftClusterset(srv), Log: log}
		run("coredns", func() error { return keeper.Run(ctx) })
	}
	var errs []error
	for i := range n {
		if err := <-errc; err != nil {
			errs = append(errs, err)
		}
		if i == 0 {
			cancel()
		}
	}
	return errors.Join(errs...)
}

// DefaultGCPercent is the GOGC `straitd dns` runs with when the environment sets none.
// The heap it keeps is small (about 0.6 kB per imported service, docs/performance-dns.md)
// and most of what it allocates is per-question garbage, so the Go default of 100, which
// lets the heap grow to twice what is live before collecting, would make garbage the
// larger part of its resident memory; 50 lets it grow by half, at the price of twice as
// many (cheap, the live heap being small) collections.
const DefaultGCPercent = 50

func setGCPercent(log *slog.Logger) {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(DefaultGCPercent)
	log.Info("garbage collection", "gogc", DefaultGCPercent)
}

// publishFirstThenFree is publish that, after the first snapshot, hands the memory freed
// since the start back to the operating system: the first lists' decoding garbage, which
// the runtime would otherwise give back only over minutes.
func publishFirstThenFree(publish func(*resolver.Snapshot)) func(*resolver.Snapshot) {
	first := true
	return func(snap *resolver.Snapshot) {
		publish(snap)
		if first {
			first = false
			debug.FreeOSMemory()
		}
	}
}

// leftClusterset says whether the snapshots srv serves had a Membership and no longer do.
func leftClusterset(srv *server.Server) func() bool {
	var member bool
	return func() bool {
		snap := srv.Snapshot()
		if snap == nil {
			return false
		}
		if snap.Config().Member {
			member = true
			return false
		}
		return member
	}
}

// servedZones are the zones of the snapshot srv serves, once it serves one.
func servedZones(srv *server.Server) func() ([]string, bool) {
	return func() ([]string, bool) {
		snap := srv.Snapshot()
		if snap == nil {
			return nil, false
		}
		return snap.Config().Zones, true
	}
}

func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry, srv *server.Server) error {
	mux := http.NewServeMux()
	// Uncompressed: a few kB, and a gzip writer is hundreds of kB kept between scrapes.
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{DisableCompression: true}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if srv.Snapshot() == nil {
			http.Error(w, "no snapshot yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	hs := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	if err := hs.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// keepBuild keeps this server's build in the Membership's status until ctx ends, then
// takes it out; meanwhile it takes out the entries of strait dns pods that are gone
// without withdrawing theirs (pruneGone). The pod's hostname is its name.
func keepBuild(ctx context.Context, cfg *rest.Config, namespace string, svc types.NamespacedName, log *slog.Logger) error {
	pod, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("the pod's name: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	self := daemonbuild.Self(straitv1.DaemonDNS, os.Getenv("NODE_NAME"), pod, time.Now())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(pruneInterval):
			}
			if err := pruneGone(ctx, c, namespace, svc, pod, time.Now()); err != nil && ctx.Err() == nil {
				log.Error("pruning the entries of gone strait dns pods", "err", err)
			}
		}
	}()
	daemonbuild.Keep(ctx, c, namespace, self, buildInterval, buildRetry,
		func(err error) { log.Error("publishing the build", "err", err) })
	<-done
	return nil
}

// pruneGone takes out of the Membership's status.daemons the strait dns entries whose
// pod is not among svc's endpoints (ready or not): a pod killed with its containers, or
// whose withdrawal at exit failed, left its entry, and strait version would list it as
// running for good. Every replica does it; the prune's tests make two at once safe.
// Read directly (list: the verbs the informers hold), once a pruneInterval.
func pruneGone(ctx context.Context, c client.Client, namespace string, svc types.NamespacedName, self string, now time.Time) error {
	ms := &straitv1.MembershipList{}
	if err := c.List(ctx, ms, client.InNamespace(namespace)); err != nil {
		return err
	}
	var m *straitv1.Membership
	for i := range ms.Items {
		if ms.Items[i].Name == straitv1.MembershipName {
			m = &ms.Items[i]
		}
	}
	if m == nil {
		return nil
	}
	eps := &discoveryv1.EndpointSliceList{}
	if err := c.List(ctx, eps, client.InNamespace(svc.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
		return err
	}
	gone := daemonbuild.GonePods(m, straitv1.DaemonDNS, endpointPods(eps.Items), self, now, pruneGrace)
	if len(gone) == 0 {
		return nil
	}
	return daemonbuild.Prune(ctx, c, m, gone)
}

// endpointPods are the pods the slices' endpoints name.
func endpointPods(slices []discoveryv1.EndpointSlice) []string {
	var pods []string
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
				pods = append(pods, e.TargetRef.Name)
			}
		}
	}
	return pods
}

// buildInterval and buildRetry: how often the build is put back into the Membership
// (a no-op apply while it is there), and how soon after a failure. pruneInterval: how
// often the entries of gone pods are looked for; pruneGrace: how old an entry must be
// to be taken for gone (a new pod publishes before its endpoint is listed).
const (
	buildInterval = 5 * time.Minute
	buildRetry    = 5 * time.Second
	pruneInterval = 30 * time.Second
	pruneGrace    = time.Minute
)

func namespacedName(s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, fmt.Errorf("%q: want namespace/name", s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}
