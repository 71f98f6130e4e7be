package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/daemonbuild"
	"github.com/straitnet/strait/internal/exemplar"
	"github.com/straitnet/strait/internal/kubewatch"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/gateway"
	"github.com/straitnet/strait/nodeagent/globalnet"
	"github.com/straitnet/strait/nodeagent/health"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
)

// CableFactory builds the cable driver a Membership asks for on node. It is called
// again when the Membership's driver changes.
type CableFactory func(ctx context.Context, m *straitv1.Membership, node string) (cable.Driver, error)

// Config of one agent.
type Config struct {
	NodeName  string
	Namespace string
	// Resync is the period of the full resync.
	Resync time.Duration
	// HealthInterval is how often the active gateway probes every peer.
	HealthInterval time.Duration
	Election       gateway.Timing
	Kernel         kernel.Kernel
	// Cables builds cable drivers; nil: this node never runs a cable.
	Cables CableFactory
	Prober health.Prober
	// FailoverProber times a failover to this node: the first answer of every peer
	// through the new cable; nil: failovers are not timed.
	FailoverProber health.FirstReplier
	// MetricsAddr and HealthAddr: "0" disables.
	MetricsAddr, HealthAddr string
	// PeerPort is the other agents' metrics port, where they answer APIServerProbePath;
	// New sets it from MetricsAddr (0 when metrics are off: the active gateway then never
	// holds through an API server that does not answer it).
	PeerPort int
	// Metrics is where the agent's Prometheus metrics are registered
	// (controller-runtime's metrics.Registry in the binary); nil: nowhere.
	Metrics prometheus.Registerer
	// Lookup resolves the Peers' endpoint hostnames; nil: the system's resolver.
	Lookup LookupFunc
}

// Agent is `straitd agent` on one node.
type Agent struct {
	cfg    Config
	dp     *Dataplane
	client client.Client
	// live reads from the API server itself, past the informers (see updateLive).
	live    client.Reader
	kube    kubernetes.Interface
	mgr     ctrl.Manager
	trigger chan event.GenericEvent
	metrics *metrics

	mu sync.Mutex
	// running is Run's context: the election lives as long as it, so that SIGTERM
	// releases the Lease at once rather than after the manager has stopped.
	running    context.Context
	driver     cable.Driver
	driverKind straitv1.CableDriver
	// stopWatch ends the watch of driver, if it is a cable.Watcher.
	stopWatch context.CancelFunc
	elector   *gateway.Elector
	// cablePort is the Membership's cable port, which the fence guards; unfenced: no
	// fence of this node's is left (checked once per process on a node that runs no
	// cable).
	cablePort  uint16
	unfenced   bool
	stopElect  context.CancelFunc
	electDone  chan struct{}
	watchingEP bool
	last       Desired
	lastPeers  []straitv1.Peer
	resolver   *endpointResolver
	// self is this agent's entry in the Membership's status.daemons: its build.
	self straitv1.DaemonStatus
}

// Scheme knows every type the agent reads or writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = straitv1.AddToScheme(s)
	return s
}

// New builds the agent for the cluster at cfg.
func New(restCfg *rest.Config, cfg Config) (*Agent, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("node name is required")
	}
	if err := cfg.Election.Validate(); err != nil {
		return nil, fmt.Errorf("gateway election: %w", err)
	}
	// The elector's client: its renewals (every RetryPeriod, retried at a quarter of it)
	// must never wait behind client-go's default limit of 5 requests/s, or a short
	// retry period would make the active gateway miss its renew deadline.
	electCfg := rest.CopyConfig(restCfg)
	electCfg.QPS = float32(5 + 4/cfg.Election.RetryPeriod.Seconds())
	electCfg.Burst = 2 * int(electCfg.QPS)
	kube, err := kubernetes.NewForConfig(electCfg)
	if err != nil {
		return nil, err
	}
	// The other gateways ask this agent whether the API server answers it, on the
	// metrics port (APIServerProbePath); the handler needs the agent made below.
	var a *Agent
	probe := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.serveAPIServerProbe(w, r) })
	cfg.PeerPort = peerPort(cfg.MetricsAddr)
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme: Scheme(),
		Metrics: metricsserver.Options{BindAddress: cfg.MetricsAddr,
			ExtraHandlers: map[string]http.Handler{APIServerProbePath: probe},
			HandlerOpts:   []func(*promhttp.HandlerOpts){exemplar.OpenMetrics}},
		HealthProbeBindAddress: cfg.HealthAddr,
		Cache: cache.Options{
			// After an API server outage the informers are current again within
			// seconds of its return, not after client-go's back-off of up to a
			// minute: a plain node must follow a new gateway Lease holder at once.
			NewInformer:       kubewatch.NewSharedIndexInformer,
			DefaultNamespaces: map[string]cache.Config{cfg.Namespace: {}},
			ByObject: map[client.Object]cache.ByObject{
				// Only the active gateway under globalnet reads EndpointSlices and
				// Services; the informers start on their first read.
				&discoveryv1.EndpointSlice{}: {Namespaces: map[string]cache.Config{cache.AllNamespaces: {}}},
				&corev1.Service{}:            {Namespaces: map[string]cache.Config{cache.AllNamespaces: {}}},
				// Secrets and Leases by name only: the agent's Role grants list and watch
				// on these names alone, which the API server allows only for a request
				// that carries the field selector metadata.name=<name>. A namespace-wide
				// informer would be Forbidden (and would hold the hub-access token).
				&corev1.Secret{}:        {Field: fields.OneTermEqualSelector("metadata.name", straitv1.IPsecPSKSecretName)},
				&coordinationv1.Lease{}: {Field: fields.OneTermEqualSelector("metadata.name", gateway.LeaseName)},
			},
		},
	})
	if err != nil {
		return nil, err
	}
	if err := addProbes(mgr); err != nil {
		return nil, err
	}
	met, err := newMetrics(cfg.Metrics, func() bool { return a.holding() })
	if err != nil {
		return nil, err
	}
	a = &Agent{cfg: cfg, dp: NewDataplane(cfg.Kernel), client: mgr.GetClient(), live: mgr.GetAPIReader(), kube: kube, mgr: mgr,
		resolver: newEndpointResolver(cfg.Lookup, nil),
		trigger:  make(chan event.GenericEvent, 1), metrics: met,
		self: daemonbuild.Self(straitv1.DaemonAgent, cfg.NodeName, "", time.Now())}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "node"}}}
	})
	generation := builder.WithPredicates(predicate.GenerationChangedPredicate{})
	skip := true // one agent per manager; tests run several in one process
	err = ctrl.NewControllerManagedBy(mgr).Named("strait-agent").
		WithOptions(controller.Options{SkipNameValidation: &skip, RateLimiter: syncBackoff()}).
		Watches(&straitv1.Membership{}, all, generation).
		Watches(&straitv1.Peer{}, all, generation).
		Watches(&straitv1.GlobalIngress{}, all).
		// The ipsec PSK's Secret may arrive after the Membership that names it (the
		// hub writes both; a person may rotate it): converge when it does.
		Watches(&corev1.Secret{}, all, builder.WithPredicates(secretDataChanged())).
		Watches(&corev1.Node{}, all, builder.WithPredicates(nodeChanged())).
		Watches(&coordinationv1.Lease{}, all, builder.WithPredicates(leaseHolderChanged())).
		// A claim on the gateways that is not the Lease's (a pass that stalled past its
		// term and wrote anyway, a person's edit) is undone at once by the holder, not
		// at its next resync: the hub routes every cluster to the Gateway that says
		// active.
		Watches(&straitv1.Gateway{}, all, builder.WithPredicates(gatewayClaimChanged(cfg.NodeName))).
		WatchesRawSource(source.Channel(a.trigger, handler.EnqueueRequestsFromMapFunc(
			func(context.Context, client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "node"}}}
			}))).
		Complete(reconcile.Func(a.reconcile))
	if err != nil {
		return nil, err
	}
	return a, nil
}

// syncBackoff spaces the retries of a failed pass: doubling from 100 ms up to 5 s. The
// default (up to 1,000 s) left a node that had failed through a 15 s API server outage
// without a pass for half a minute and more after it came back.
func syncBackoff() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](100*time.Millisecond, 5*time.Second)
}

// addProbes serves the DaemonSet's probes: /healthz while the manager runs, /readyz once
// its caches have synced (from then on the agent converges the node).
func addProbes(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return mgr.AddReadyzCheck("caches", func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), 100*time.Millisecond)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer caches not synced yet")
		}
		return nil
	})
}

// Trigger asks for a reconcile soon; it never blocks.
func (a *Agent) Trigger() {
	select {
	case a.trigger <- event.GenericEvent{Object: &corev1.Node{}}:
	default:
	}
}

// Run runs the agent until ctx ends; then it releases the gateway Lease (a passive
// gateway's watch sees that and takes over at once) and leaves the kernel as it is, so
// traffic flows until the next owner converges.
func (a *Agent) Run(ctx context.Context) error {
	a.mu.Lock()
	a.running = ctx
	a.mu.Unlock()
	if w, ok := a.cfg.Kernel.(kernel.Watcher); ok {
		if err := w.Watch(ctx, route.Protocol, a.Trigger); err != nil {
			return err
		}
	}
	go a.healthLoop(ctx)
	err := a.mgr.Start(ctx)
	a.stopElection()
	a.publishShutdown()
	return err
}

func (a *Agent) reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	requeue := reconcile.Result{RequeueAfter: a.cfg.Resync}
	start := time.Now()
	wait, err := a.sync(ctx)
	a.metrics.synced(time.Since(start), err)
	if err != nil {
		return reconcile.Result{}, err // retried after syncBackoff
	}
	if wait > 0 {
		requeue.RequeueAfter = wait
	}
	return requeue, err
}

// sync reads everything, converges the data plane and publishes the gateway. A
// positive wait means: come back sooner (the election is about to decide).
func (a *Agent) sync(ctx context.Context) (time.Duration, error) {
	ns := a.cfg.Namespace
	var m *straitv1.Membership
	mem := &straitv1.Membership{}
	switch err := a.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: straitv1.MembershipName}, mem); {
	case err == nil:
		m = mem
	case !apierrors.IsNotFound(err):
		return 0, fmt.Errorf("membership: %w", err)
	}
	self := &corev1.Node{}
	if err := a.client.Get(ctx, types.NamespacedName{Name: a.cfg.NodeName}, self); err != nil {
		return 0, fmt.Errorf("node %s: %w", a.cfg.NodeName, err)
	}
	capable := a.cfg.Cables != nil && GatewayCapable(m, self)
	driver, derr := a.ensureDriver(ctx, m, capable)
	// A node whose cable cannot be built must not win the Lease: every node would route
	// to it.
	capable = capable && driver != nil && derr == nil
	a.ensureElection(capable)

	var lease *coordinationv1.Lease
	if l := (&coordinationv1.Lease{}); a.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: gateway.LeaseName}, l) == nil {
		lease = l
	}
	activeSelf, settled := a.isActive()
	if a.metrics.setActive(activeSelf) {
		a.becameActive()
	}
	holder, wait := activeHolder(a.cfg.NodeName, lease, holderState{active: activeSelf, settled: settled, capable: capable},
		a.cfg.Election.RenewDeadline, time.Now())
	if wait {
		return min(a.cfg.Election.RetryPeriod, takeoverRecheck), nil
	}

	snap := Snapshot{NodeName: a.cfg.NodeName, Membership: m, ActiveGateway: holder, Driver: driver}
	var errs []error
	errs = append(errs, derr)
	if capable {
		psk, err := a.readPSK(ctx, m)
		snap.PSK = psk
		errs = append(errs, err)
	}
	peers := &straitv1.PeerList{}
	if err := a.client.List(ctx, peers, client.InNamespace(ns)); err != nil {
		return 0, fmt.Errorf("peers: %w", err)
	}
	snap.Peers = peers.Items
	var refresh time.Duration
	if capable {
		var rerrs []error
		snap.Resolved, refresh, rerrs = a.resolver.resolve(ctx, snap.Peers)
		errs = append(errs, rerrs...)
	}
	nodes := &corev1.NodeList{}
	if err := a.client.List(ctx, nodes); err != nil {
		return 0, fmt.Errorf("nodes: %w", err)
	}
	snap.Nodes = nodes.Items
	if activeSelf && m != nil && m.Spec.Globalnet != nil {
		if err := a.readIngress(ctx, &snap); err != nil {
			errs = append(errs, err)
		}
	}
	links, err := a.dp.Links(ctx)
	if err != nil {
		return 0, fmt.Errorf("links: %w", err)
	}
	snap.Links = links
	want, err := a.dp.Converge(ctx, snap)
	errs = append(errs, err)
	if !capable && err == nil {
		// Its cable is gone: so goes the fence a term of this node's left.
		errs = append(errs, a.unfence(ctx))
	}
	a.mu.Lock()
	a.last, a.lastPeers = want, snap.Peers
	a.mu.Unlock()
	if m != nil {
		errs = append(errs, a.publishGateway(ctx, m, self, snap.Links, capable, activeSelf, driver, want))
		// From the informer's copy: a request only when the entry is missing (a new
		// process, a Membership made again) or differs.
		if !daemonbuild.Published(m, a.self) {
			errs = append(errs, daemonbuild.Publish(ctx, a.client, ns, a.self))
		}
		// The entries of daemons whose node is gone: they could not withdraw their
		// own, and strait version would count them. One agent prunes, the active one.
		if gone := daemonbuild.Gone(m, snap.Nodes, a.cfg.NodeName); activeSelf && len(gone) > 0 {
			errs = append(errs, daemonbuild.Prune(ctx, a.client, m, gone))
		}
	}
	// A hostname due for resolving again brings the next pass forward.
	if refresh >= a.cfg.Resync {
		refresh = 0
	}
	return refresh, errors.Join(errs...)
}

// readPSK reads the cable's pre-shared key from the Secret the Membership names (the hub
// copies it there for the ipsec driver); nil when it names none.
func (a *Agent) readPSK(ctx context.Context, m *straitv1.Membership) ([]byte, error) {
	name := m.Spec.Cable.PSKSecretName
	if name == "" {
		return nil, nil
	}
	if name != straitv1.IPsecPSKSecretName {
		return nil, fmt.Errorf("membership spec.cable.pskSecretName %q: the agent reads the PSK only from the Secret %q (its Role names no other)",
			name, straitv1.IPsecPSKSecretName)
	}
	s := &corev1.Secret{}
	if err := a.client.Get(ctx, types.NamespacedName{Namespace: a.cfg.Namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("cable PSK secret %s/%s: %w", a.cfg.Namespace, name, err)
	}
	psk := s.Data[pskKey]
	if len(psk) == 0 {
		return nil, fmt.Errorf("cable PSK secret %s/%s has no %q", a.cfg.Namespace, name, pskKey)
	}
	return psk, nil
}

// pskKey is the data key of the PSK in its Secret.
const pskKey = "psk"

// isActive says whether this node is the active gateway and whether its elector has
// made its first decision.
func (a *Agent) isActive() (active, settled bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.elector == nil {
		return false, true
	}
	return a.elector.Active(), a.elector.Settled()
}

// stillActive says whether this node's elector says active now, at the moment of a write
// that says so. A pass reads the elector once, at its start, and may stall after that
// (SIGSTOP, a paused VM, a slow kernel call): thawed after its term has run out and
// another gateway took over, it must neither publish this node active nor mark the new
// holder's Gateway passive, or the hub would route every cluster to the fenced node.
func (a *Agent) stillActive() bool {
	active, _ := a.isActive()
	return active
}

// takeoverRecheck is how soon sync looks again while the cache says this node holds the
// Lease and the elector does not say so yet.
const takeoverRecheck = 50 * time.Millisecond

// holderState is what this node's elector says.
type holderState struct{ active, settled, capable bool }

// activeHolder is the node the data plane routes to as the active gateway, from the
// Lease as the cache has it (nil: none) and this node's elector; "" is none. wait: leave
// the data plane as it is and look again soon, because a new holder is about to be
// known. Tearing the data plane down for that moment (no gateway: no vx-strait, no
// routes, the cable cleaned up) remade vx-strait on every node at a graceful handover,
// and on the new gateway at about one takeover in three. It waits
//   - while a holder's release is younger than the term it left (one second): a standby
//     takes over within it, and the released path carries traffic until then;
//   - when the cache says this node holds the Lease and its elector does not say so:
//     the previous process held it (the elector has not settled), the elector has just
//     taken it and the cache saw the write before the elector could say so, or it
//     stepped down at its renew deadline and is taking its own Lease again (an API
//     server that answers late). The kernel's fence keeps its data path to the Lease's
//     term either way; tearing the data plane down for a retake remade vx-strait and
//     the cable at every late renewal of a loaded machine. Only for a renewal younger
//     than the Lease's term and renewDeadline (the retake's own time): a holder cut off
//     from the API server reads its own name from a stale cache, and its data plane
//     comes down once its fence has closed and its retake has run out of time. Only
//     this node writes its name, so that renewal time is on this node's clock.
func activeHolder(self string, l *coordinationv1.Lease, st holderState, renewDeadline time.Duration, now time.Time) (holder string, wait bool) {
	if st.active {
		// Also before the cache has the Lease this node's elector has just created.
		return self, false
	}
	if l == nil {
		return "", false
	}
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	switch {
	case holder == "":
		return "", released(l, now)
	case holder != self:
		return holder, false
	case !st.capable:
		return "", false
	case !st.settled:
		return "", true
	case l.Spec.RenewTime != nil && now.Sub(l.Spec.RenewTime.Time) < term(l)+renewDeadline:
		return "", true
	}
	return "", false
}

// term is the Lease's duration as its holder wrote it (none: nothing).
func term(l *coordinationv1.Lease) time.Duration {
	if l.Spec.LeaseDurationSeconds == nil {
		return 0
	}
	return time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
}

// released says whether l, which has no holder, was released less than its (released)
// term ago.
func released(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return false
	}
	return now.Sub(l.Spec.RenewTime.Time) < term(l)
}

// holding says whether this node holds the gateway through an API server that answers
// no gateway.
func (a *Agent) holding() bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.elector != nil && a.elector.Holding()
}

// ensureElection starts campaigning on a capable node and stops (releasing the Lease)
// on one that no longer is.
func (a *Agent) ensureElection(capable bool) {
	a.mu.Lock()
	running, parent := a.elector != nil, a.running
	a.mu.Unlock()
	switch {
	case capable && !running:
		if parent == nil || parent.Err() != nil {
			return // shutting down: never campaign again
		}
		ectx, cancel := context.WithCancel(log.IntoContext(parent, a.mgr.GetLogger().WithName("gateway-election")))
		el := gateway.NewElector(a.kube, a.cfg.Namespace, a.cfg.NodeName, a.cfg.Election, func(bool) { a.Trigger() }).
			WithReport(a.metrics.electionReport())
		if a.cfg.PeerPort > 0 {
			el.WithConfirm(a.noOtherGatewayReachesTheAPIServer)
		}
		if f, ok := a.cfg.Kernel.(kernel.Fencer); ok {
			el.WithFence(func(until time.Time) error { return a.fence(ectx, f, until) })
		}
		done := make(chan struct{})
		a.mu.Lock()
		a.elector, a.stopElect, a.electDone, a.unfenced = el, cancel, done, false
		a.mu.Unlock()
		go func() {
			defer close(done)
			el.Run(ectx)
		}()
	case !capable && running:
		a.stopElection()
	}
}

func (a *Agent) stopElection() {
	a.mu.Lock()
	cancel, done := a.stopElect, a.electDone
	a.elector, a.stopElect, a.electDone = nil, nil, nil
	a.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (a *Agent) ensureDriver(ctx context.Context, m *straitv1.Membership, capable bool) (cable.Driver, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !capable || m == nil {
		return a.driver, nil // kept so a node that stops being capable cleans its cable up
	}
	a.cablePort = uint16(m.Spec.Cable.Port)
	if a.driver != nil && a.driverKind == m.Spec.Cable.Driver {
		return a.driver, nil
	}
	if a.driver != nil {
		if err := a.driver.Cleanup(ctx); err != nil {
			return a.driver, fmt.Errorf("cable %s cleanup before switching to %s: %w", a.driverKind, m.Spec.Cable.Driver, err)
		}
		if c, ok := a.driver.(io.Closer); ok {
			_ = c.Close()
		}
	}
	if a.stopWatch != nil {
		a.stopWatch()
		a.stopWatch = nil
	}
	d, err := a.cfg.Cables(ctx, m, a.cfg.NodeName)
	if err != nil {
		a.driver = nil
		return nil, fmt.Errorf("cable %s: %w", m.Spec.Cable.Driver, err)
	}
	a.driver, a.driverKind = d, m.Spec.Cable.Driver
	a.metrics.cableDriver(string(d.Name()))
	// A driver that can lose its state behind the agent's back (charon restarting) is
	// watched for as long as it is the agent's, so that the agent converges at once.
	if w, ok := d.(cable.Watcher); ok && a.running != nil {
		wctx, cancel := context.WithCancel(a.running)
		a.stopWatch = cancel
		go w.Watch(wctx, a.Trigger)
	}
	return d, nil
}

// readIngress reads GlobalIngresses and the ready endpoints of their services.
func (a *Agent) readIngress(ctx context.Context, snap *Snapshot) error {
	gis := &straitv1.GlobalIngressList{}
	if err := a.client.List(ctx, gis, client.InNamespace(a.cfg.Namespace)); err != nil {
		return fmt.Errorf("global ingresses: %w", err)
	}
	snap.Ingresses = gis.Items
	a.mu.Lock()
	watching := a.watchingEP
	a.watchingEP = true
	a.mu.Unlock()
	if !watching {
		// The NAT follows the services' endpoints, ports and session affinity.
		trigger := func(any) { a.Trigger() }
		for _, o := range []client.Object{&discoveryv1.EndpointSlice{}, &corev1.Service{}} {
			inf, err := a.mgr.GetCache().GetInformer(ctx, o)
			if err != nil {
				return fmt.Errorf("%T informer: %w", o, err)
			}
			if _, err := inf.AddEventHandler(toolsHandler(trigger)); err != nil {
				return err
			}
		}
	}
	snap.Endpoints = map[string][]netip.Addr{}
	snap.Ports = map[string][]globalnet.Port{}
	snap.Sticky = map[string]bool{}
	for _, gi := range gis.Items {
		if gi.Spec.GlobalIP == "" {
			continue
		}
		slices := &discoveryv1.EndpointSliceList{}
		if err := a.client.List(ctx, slices, client.InNamespace(gi.Spec.ServiceNamespace),
			client.MatchingLabels{discoveryv1.LabelServiceName: gi.Spec.ServiceName}); err != nil {
			return fmt.Errorf("endpoints of %s/%s: %w", gi.Spec.ServiceNamespace, gi.Spec.ServiceName, err)
		}
		key := gi.Spec.ServiceNamespace + "/" + gi.Spec.ServiceName
		svc := &corev1.Service{}
		err := a.client.Get(ctx, types.NamespacedName{Namespace: gi.Spec.ServiceNamespace, Name: gi.Spec.ServiceName}, svc)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("service %s: %w", key, err)
		}
		if err == nil {
			snap.Ports[key] = ServicePorts(svc, slices.Items)
			snap.Sticky[key] = svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP
		}
		for _, s := range slices.Items {
			if s.AddressType != discoveryv1.AddressTypeIPv4 {
				continue
			}
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
					continue
				}
				for _, ad := range ep.Addresses {
					if ip, err := netip.ParseAddr(ad); err == nil {
						snap.Endpoints[key] = append(snap.Endpoints[key], ip)
					}
				}
			}
		}
	}
	return nil
}

// Cleanup removes everything of ours from the node: the kernel state and, when a
// driver is given, the cable.
func Cleanup(ctx context.Context, k kernel.Kernel, d cable.Driver) error {
	return NewDataplane(k).Cleanup(ctx, d)
}
