package controllers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/sharedtable"
	"github.com/straitnet/strait/plan"
)

// Config of the reconciler.
type Config struct {
	// RetryInterval is when a ClusterSet with unreachable members is looked at again
	// (a member coming back also triggers a reconcile at once); default 30s.
	RetryInterval time.Duration
	// ProbeInterval is how often each member's API server is health-checked; default 5s.
	ProbeInterval time.Duration
	// ResyncInterval is how long a member whose inputs did not change is left alone
	// before the hub checks every object there again and repairs what drifted; default
	// the ClusterSet's spec.interval (10 minutes). Changes by others that the member
	// watches report are repaired at once.
	ResyncInterval time.Duration
	// MaxConcurrentMembers bounds the members written in parallel, and the
	// ClusterSetMembers; default 32. A full pass, which builds all of a member's objects
	// (at 10,000 exports some 40,000), is bounded by a quarter of it (fullPasses): a new
	// export is a write or two per member, which 255 members wait for, while the full
	// passes of a cold start or a resync hold a member's objects each.
	MaxConcurrentMembers int
	// Local is the connection for clusters without a kubeConfig: the hub's own cluster.
	Local *rest.Config
	// Self is this hub process and its build, put into every ClusterSet's status.hub
	// (what strait version reads); nil leaves status.hub alone.
	Self *straitv1.DaemonStatus
}

// ClusterSetReconciler reconciles ClusterSets.
type ClusterSetReconciler struct {
	hub      client.Client
	secrets  client.Reader // uncached: the hub does not keep every Secret in memory
	recorder events.EventRecorder
	members  *members.Cache
	metrics  *Metrics
	cfg      Config

	queue     atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
	relevance sync.Map // types.NamespacedName -> *relevance
	applied   sync.Map // members.Key -> *appliedTable
	// shared keeps the nodes of the members' records that are equal once
	// (appliedTable.digested).
	shared sharedtable.Pool
	// planners keep each ClusterSet's export resolutions from one reconcile to the
	// next (plan.Planner); a ClusterSet is reconciled by one worker at a time.
	planners sync.Map // types.NamespacedName -> *plan.Planner
	// recordsWritten is when each ClusterSetMember was last written (writeRecords).
	recordsWritten sync.Map // types.NamespacedName -> *recordTimes
	// kubeConfigsRead is when each member's kubeconfig Secret was last read (connect).
	kubeConfigsRead sync.Map // members.Key -> kubeConfigRead
	// facts are each member's facts as the last reconcile read them (observe).
	facts sync.Map // members.Key -> *memberFacts
	// standIns, which only tests set (useStandIns), gives the connection of a member
	// that an in-memory stand-in answers for in place of an API server, nil for the
	// others (see connectMember). Always nil in straitd.
	standIns func(members.Key) *members.Member
}

// DefaultMaxConcurrentMembers is Config.MaxConcurrentMembers's default: at 255 members
// and some 5 ms a request, 8 at a time made an export wait 0.7 s for its writes alone.
const DefaultMaxConcurrentMembers = 32

// fullPasses is how many full passes over members run at once (Config.MaxConcurrentMembers).
func (c Config) fullPasses() int { return max(1, c.MaxConcurrentMembers/4) }

// NewClusterSetReconciler builds the reconciler from a manager.
func NewClusterSetReconciler(mgr ctrl.Manager, metrics *Metrics, cfg Config) *ClusterSetReconciler {
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = 30 * time.Second
	}
	if cfg.MaxConcurrentMembers == 0 {
		cfg.MaxConcurrentMembers = DefaultMaxConcurrentMembers
	}
	if cfg.Local == nil {
		cfg.Local = mgr.GetConfig()
	}
	r := &ClusterSetReconciler{
		hub:      mgr.GetClient(),
		secrets:  mgr.GetAPIReader(),
		recorder: mgr.GetEventRecorder("strait-hub"),
		metrics:  metrics,
		cfg:      cfg,
	}
	r.members = members.NewCache(members.Options{
		Scheme:        mgr.GetScheme(),
		Watched:       watchedKinds(),
		ProbeInterval: cfg.ProbeInterval,
		OnChange:      r.memberChanged,
		Prints:        memberPrints,
		FieldManager:  straitv1.FieldManager,
		Mapper:        memberMapper(),
		Log:           mgr.GetLogger().WithName("members"),
	})
	return r
}

// SetupWithManager registers the controller: ClusterSet changes of generation or of the
// reconcile-request annotation, and changes in members through a queue-feeding source.
func (r *ClusterSetReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(stopper{r.members}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&straitv1.ClusterSet{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// A ClusterSetMember someone deleted is written again; the hub's own writes
		// trigger nothing.
		Watches(&straitv1.ClusterSetMember{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(),
			&straitv1.ClusterSet{}, handler.OnlyControllerOwner()), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			r.queue.Store(&q)
			return nil
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Named("clusterset").
		Complete(r)
}

// stopper stops the member connections when the manager stops.
type stopper struct{ c *members.Cache }

func (s stopper) Start(ctx context.Context) error {
	<-ctx.Done()
	s.c.Stop()
	return nil
}

func (stopper) NeedLeaderElection() bool { return false }

// Reconcile is one pass over a ClusterSet.
func (r *ClusterSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	start := time.Now()
	logger := log.FromContext(ctx)
	obj := &straitv1.ClusterSet{}
	if err := r.hub.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	csLabel := plan.ClusterSetLabel(req.NamespacedName)
	defer func() { r.metrics.reconcileDuration.WithLabelValues(csLabel).Observe(time.Since(start).Seconds()) }()
	clock := r.metrics.phaseClock(csLabel, start)

	// Status is patched once, at the end, whatever happened: after the announcement of
	// a new generation, if there was one.
	base := statusOf(obj)
	var announced *announcement
	defer func() {
		if announced != nil {
			switch wrote, err := announced.settle(); {
			case err != nil:
				retErr = errors.Join(retErr, err)
			case wrote:
				// From what the announcement wrote, at its resourceVersion: a merge
				// patch between two resourceVersions carries obj's and would conflict.
				base = announced.obj
				obj.ResourceVersion = base.ResourceVersion
			}
		}
		if !obj.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(obj, straitv1.Finalizer) {
			return
		}
		patched := time.Now()
		if err := r.patchStatus(ctx, base, obj); err != nil {
			retErr = errors.Join(retErr, err)
		}
		clock.observe("status-patch", time.Since(patched))
	}()

	// A reconcile someone asked for reads every member's kubeconfig again.
	var requested bool
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok {
		requested = v != obj.Status.LastHandledReconcileAt
		obj.Status.SetLastHandledReconcileRequest(v)
	}

	if !obj.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, obj)
	}
	if !controllerutil.ContainsFinalizer(obj, straitv1.Finalizer) {
		patch := client.MergeFrom(obj.DeepCopy())
		controllerutil.AddFinalizer(obj, straitv1.Finalizer)
		if err := r.hub.Patch(ctx, obj, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("adding finalizer: %w", err)
		}
	}

	if obj.Spec.Suspend {
		logger.Info("reconciliation is suspended")
		return ctrl.Result{}, nil
	}

	// Objects from git may arrive before the webhook is installed: an invalid spec is a
	// terminal state, not a retry loop. The spec is validated and defaulted here, once
	// per generation (the planner keeps the last valid one).
	spec, errs := r.plannerFor(req.NamespacedName).Check(obj)
	if len(errs) > 0 {
		r.stalled(obj, straitv1.ReasonValidationFailed, errs.ToAggregate().Error())
		r.metrics.errors.WithLabelValues(csLabel, "validation").Inc()
		return ctrl.Result{}, nil
	}
	// A new generation whose reconcile takes longer than announceAfter is announced
	// (Reconciling=True, Ready=Unknown), so that people see it being worked on.
	// kstatus (Flux's health checks), kubectl wait and the Argo CD health check need no
	// announcement: they pass over a status whose observedGeneration is older than the
	// generation. A quick reconcile writes its status once; one that ends without a
	// verdict (an error) leaves the announcement.
	if obj.Status.ObservedGeneration != obj.Generation {
		msg := fmt.Sprintf("reconciling generation %d", obj.Generation)
		setCondition(obj, meta.ReconcilingCondition, metav1.ConditionTrue, straitv1.ReasonProgressing, msg)
		setCondition(obj, meta.ReadyCondition, metav1.ConditionUnknown, straitv1.ReasonProgressing, msg)
		announced = r.announce(ctx, base, statusOf(obj))
	}

	rec, err := r.readRecords(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	known := rec.known(obj)
	clock.done("prepare")
	conns := r.connect(ctx, obj, known, requested)
	clock.done("connect")
	observed := r.observe(ctx, obj, conns)
	r.relevanceFor(req.NamespacedName).update(obj, observed)
	clock.done("observe")
	// What the members showed can make the spec invalid too (two entries reaching one
	// cluster, a global CIDR full): Stalled as well, before anything is written, so
	// every member keeps what it holds. A fix may come without a new generation (a
	// kubeconfig Secret pointed at the right cluster; Secrets are not watched): it is
	// looked at again on the interval.
	p, errs := r.computePlan(req.NamespacedName, spec, observed)
	clock.done("plan")
	if len(errs) > 0 {
		r.stalled(obj, straitv1.ReasonValidationFailed, errs.ToAggregate().Error())
		r.metrics.errors.WithLabelValues(csLabel, "validation").Inc()
		return ctrl.Result{RequeueAfter: jitter(reconcileInterval(obj))}, nil
	}

	results := r.writeMembers(ctx, obj, p, conns)
	r.releaseLeftClusters(obj, results)
	clock.done("write")
	all := r.setStatus(obj, p, conns, results, known, start)
	clock.done("status")
	behind, err := r.writeRecords(ctx, obj, rec, all)
	if err != nil {
		return ctrl.Result{}, err
	}
	clock.done("records")
	res := r.result(obj, results)
	for _, m := range results {
		if m.recheck > 0 {
			res.RequeueAfter = min(res.RequeueAfter, m.recheck)
		}
	}
	if behind > 0 {
		res.RequeueAfter = min(res.RequeueAfter, recordsCatchUp)
	}
	return res, nil
}

// recordsCatchUp is when the hub looks again while some ClusterSetMembers lag behind in
// their counts (writeRecords).
const recordsCatchUp = time.Second

// result decides when to look again: on the interval when all is well, after
// RetryInterval when a member was unreachable or refused a write.
func (r *ClusterSetReconciler) result(obj *straitv1.ClusterSet, results map[string]*memberResult) ctrl.Result {
	interval := reconcileInterval(obj)
	for _, res := range results {
		if res.err != nil {
			return ctrl.Result{RequeueAfter: min(interval, r.cfg.RetryInterval)}
		}
	}
	return ctrl.Result{RequeueAfter: jitter(interval)}
}

// reconcileInterval is the ClusterSet's spec.interval, 10 minutes by default.
func reconcileInterval(obj *straitv1.ClusterSet) time.Duration {
	if obj.Spec.Interval != nil && obj.Spec.Interval.Duration > 0 {
		return obj.Spec.Interval.Duration
	}
	return 10 * time.Minute
}

// resyncInterval is how often every member is checked in full. The periodic reconcile
// comes at the interval plus jitter, so it finds every member's last full pass older
// than the interval and checks them all.
func (r *ClusterSetReconciler) resyncInterval(obj *straitv1.ClusterSet) time.Duration {
	if r.cfg.ResyncInterval > 0 {
		return r.cfg.ResyncInterval
	}
	return reconcileInterval(obj)
}

// jitter spreads periodic reconciles of many ClusterSets by up to 10%.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration(rand.Int64N(int64(d)/10+1))
}

// stalled records a spec that cannot be reconciled until it changes.
func (r *ClusterSetReconciler) stalled(obj *straitv1.ClusterSet, reason, msg string) {
	setCondition(obj, meta.StalledCondition, metav1.ConditionTrue, reason, msg)
	setCondition(obj, meta.ReadyCondition, metav1.ConditionFalse, reason, msg)
	apimeta.RemoveStatusCondition(&obj.Status.Conditions, meta.ReconcilingCondition)
	obj.Status.ObservedGeneration = obj.Generation
	r.event(obj, "Warning", reason, "Validate", "%s", msg)
	r.metrics.recordStalled(plan.ClusterSetLabel(clusterSetName(obj)), obj.Generation)
}

func (r *ClusterSetReconciler) patchStatus(ctx context.Context, base, obj *straitv1.ClusterSet) error {
	if r.cfg.Self != nil {
		obj.Status.Hub = r.cfg.Self.DeepCopy()
	}
	if apiEqualStatus(base, obj) {
		return nil
	}
	patched, patch := statusPatch(base, obj)
	if err := r.hub.Status().Patch(ctx, patched, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching status: %w", err)
	}
	obj.ResourceVersion = patched.ResourceVersion
	return nil
}

// statusOf is a ClusterSet of obj's name and namespace and a copy of its status: what
// a status patch is made from.
func statusOf(obj *straitv1.ClusterSet) *straitv1.ClusterSet {
	return &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: obj.Name, Namespace: obj.Namespace},
		Status: *obj.Status.DeepCopy()}
}

// statusPatch is the merge patch from base's status to obj's, and the object to send
// it with (a copy: it takes the API server's answer). A merge patch is the difference
// of two objects' JSON, so it is made from their status alone: with the spec of 1,000
// members and 10,000 exports in both, each patch cost 35–64 ms of CPU and 19 MB
// (BenchmarkStatusPatch). base's status is only read, so it is not copied.
func statusPatch(base, obj *straitv1.ClusterSet) (*straitv1.ClusterSet, client.Patch) {
	from := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: base.Name, Namespace: base.Namespace}, Status: base.Status}
	return statusOf(obj), client.MergeFrom(from)
}

// announceAfter is how long a reconcile of a new generation runs before it is announced.
// At 255 members the status is some 280 KB, and a patch of it took 150 ms of an
// export's time.
const announceAfter = time.Second

// announcement is a status patch that starts beside the reconcile once it has run
// announceAfter: the status patch at the end cancels it, or waits for it and goes from
// what it wrote.
type announcement struct {
	timer *time.Timer
	done  chan struct{}
	obj   *straitv1.ClusterSet
	err   error
}

// announce patches obj's status from base after announceAfter, in the background.
func (r *ClusterSetReconciler) announce(ctx context.Context, base, obj *straitv1.ClusterSet) *announcement {
	a := &announcement{done: make(chan struct{}), obj: obj}
	a.timer = time.AfterFunc(announceAfter, func() {
		defer close(a.done)
		a.err = r.patchStatus(ctx, base, obj)
	})
	return a
}

// settle cancels the announcement if it has not started, else waits for it to end;
// wrote says it ran.
func (a *announcement) settle() (wrote bool, err error) {
	if a.timer.Stop() {
		return false, nil
	}
	<-a.done
	return true, a.err
}

// enqueue asks for a reconcile of a ClusterSet.
func (r *ClusterSetReconciler) enqueue(cs types.NamespacedName) {
	if q := r.queue.Load(); q != nil {
		(*q).Add(reconcile.Request{NamespacedName: cs})
	}
}

// computePlan is the ClusterSet's plan, computed through its planner; it counts the
// exports resolved and those taken over (strait_hub_export_resolutions_total).
func (r *ClusterSetReconciler) computePlan(cs types.NamespacedName, spec *plan.ValidSpec, observed plan.Observed) (*plan.Plan, field.ErrorList) {
	pl := r.plannerFor(cs)
	p, errs := pl.Compute(spec, observed)
	label := plan.ClusterSetLabel(cs)
	r.metrics.resolutions.WithLabelValues(label, "resolved").Add(float64(pl.Resolved))
	r.metrics.resolutions.WithLabelValues(label, "reused").Add(float64(pl.Reused))
	return p, errs
}

// plannerFor is the planner of a ClusterSet's reconciles.
func (r *ClusterSetReconciler) plannerFor(cs types.NamespacedName) *plan.Planner {
	v, _ := r.planners.LoadOrStore(cs, plan.NewPlanner())
	return v.(*plan.Planner)
}

// forget drops everything kept for a ClusterSet that no longer exists.
func (r *ClusterSetReconciler) forget(cs types.NamespacedName) {
	for _, k := range r.members.Keys(cs) {
		r.release(k)
	}
	r.relevance.Delete(cs)
	r.planners.Delete(cs)
	r.recordsWritten.Delete(cs)
	r.metrics.forget(plan.ClusterSetLabel(cs))
}

// release drops what the hub keeps of a member: its connection, its applied-object
// table, when its kubeconfig was read and its facts.
func (r *ClusterSetReconciler) release(k members.Key) {
	r.members.Forget(k)
	r.applied.Delete(k)
	r.kubeConfigsRead.Delete(k)
	r.facts.Delete(k)
}

func setCondition(obj *straitv1.ClusterSet, typ string, status metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: obj.Generation})
}

// maxEventNote is below the API server's 1024-character limit on an event's note.
const maxEventNote = 1000

// event records an event about a ClusterSet, its note cut to what the API server takes.
func (r *ClusterSetReconciler) event(obj *straitv1.ClusterSet, typ, reason, action, format string, args ...any) {
	note := fmt.Sprintf(format, args...)
	if len(note) > maxEventNote {
		note = note[:maxEventNote-3] + "..."
	}
	r.recorder.Eventf(obj, nil, typ, reason, action, "%s", note)
}
