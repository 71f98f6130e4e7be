package prints

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/connections"
)

// DefaultDebounce is how long the reporter gathers changes before it writes.
const DefaultDebounce = 100 * time.Millisecond

// DefaultLatencyEvery is how often at most a change of the connections' latencies alone
// is written. Every active gateway rewrites its Peers' latencies at each health round
// (5 s), so that the 32 listed connections' latencies change several times a second in
// a member of a large ClusterSet; written at once, they would make a Membership write,
// and an event to the hub, which watches every member's Membership, every debounce. A
// change of state, or of the prints, is written at once.
const DefaultLatencyEvery = 30 * time.Second

// Options of Run.
type Options struct {
	// Namespace of the Membership and the Peers; empty is strait-system.
	Namespace string
	// Debounce gathers a burst of changes into one write; 0 is DefaultDebounce.
	Debounce time.Duration
	// LatencyEvery is how long a change of the connections' latencies alone waits after
	// the Membership last held the report; 0 is DefaultLatencyEvery.
	LatencyEvery time.Duration
	// Log is told about failed writes and ClusterSets left out of the report.
	Log logr.Logger
}

// Retries after a failed write: from retryFirst, doubling up to retryMax.
const (
	retryFirst = time.Second
	retryMax   = 30 * time.Second
)

// requestTimeout bounds each request of the reporter, watches included.
const requestTimeout = 10 * time.Second

// echoWait is how long after a write the Membership the watch brought may still be
// the one from before it: until then a difference between its prints and what was
// written is taken for the write's echo on its way, after it for someone else's write
// (another replica's, a Membership made again), and the prints are written again.
const echoWait = 10 * time.Second

// Run keeps the Membership's status.prints and status.connections, through cfg, until
// ctx is done. It writes once every kind has been listed and the Membership exists, then
// whenever they change (a change of latencies alone at most every LatencyEvery); a
// failed write is logged and tried again. It returns an error only when it cannot start.
//
// Its reflectors hand the objects to the Keeper, not to an informer's store: what it
// holds of an object is the keeper's fingerprint (TestWhatTheReporterHoldsAnObject).
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	if o.Namespace == "" {
		o.Namespace = straitv1.SystemNamespace
	}
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.LatencyEvery <= 0 {
		o.LatencyEvery = DefaultLatencyEvery
	}
	// Every request bounded, its watches included (they resume where they ended), as
	// the hub's member connections are: an unbounded watch holds a stopping API server
	// up to its own shutdown timeout, and one that hangs is never noticed.
	cfg = rest.CopyConfig(cfg)
	if cfg.Timeout == 0 {
		cfg.Timeout = requestTimeout
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("metadata client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("dynamic client: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := straitv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building scheme: %w", err)
	}
	writer, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	r := &reporter{opts: o, keeper: NewKeeper(), writer: writer, wake: make(chan struct{}, 1)}
	r.membership = &membershipStore{changed: r.changed}
	transform := printedOnly()
	var reflectors []*toolscache.Reflector
	for kind, gvr := range resources() {
		store := &keeperStore{keeper: r.keeper, kind: kind, transform: transform, changed: r.changed}
		r.kinds = append(r.kinds, store)
		reflectors = append(reflectors, toolscache.NewReflectorWithOptions(metadataOnly(meta, gvr),
			&metav1.PartialObjectMetadata{}, store, toolscache.ReflectorOptions{Name: "strait-dns-prints/" + gvr.Resource}))
	}
	peers := &keeperStore{keeper: r.keeper, kind: peerKind, changed: r.changed}
	r.kinds = append(r.kinds, peers)
	reflectors = append(reflectors, toolscache.NewReflectorWithOptions(thePeers(dyn, o.Namespace),
		&unstructured.Unstructured{}, peers, toolscache.ReflectorOptions{Name: "strait-dns-prints/peers"}))
	reflectors = append(reflectors, toolscache.NewReflectorWithOptions(theMembership(dyn, o.Namespace),
		&unstructured.Unstructured{}, r.membership, toolscache.ReflectorOptions{Name: "strait-dns-prints/membership"}))

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for _, rf := range reflectors {
		wg.Go(func() { rf.RunWithContext(ctx) })
	}
	r.loop(ctx)
	return nil
}

// reporter writes the keeper's prints and connections into the Membership's status.
type reporter struct {
	opts       Options
	keeper     *Keeper
	kinds      []*keeperStore
	membership *membershipStore
	writer     client.Client
	wake       chan struct{}

	// What the last successful write wrote, into which Membership, and when (zero once
	// the Membership was seen holding it).
	written   report
	writtenTo types.UID
	writtenAt time.Time
	// heldAt is when the Membership last held this reporter's report, its own write or
	// another replica's: a change of latencies alone waits LatencyEvery after it.
	heldAt time.Time
	// omitted is how many ClusterSets the last report left out.
	omitted int
}

// report is what the reporter writes, or what a Membership holds: status.prints and
// status.connections.
type report struct {
	prints []straitv1.MemberPrint
	conns  *straitv1.MemberConnections
}

// same says whether a and b hold the same prints and connections.
func (a report) same(b report) bool {
	return Equal(a.prints, b.prints) && connections.Same(a.conns, b.conns)
}

// sameStates says whether a and b hold the same prints and connections but for
// latencies.
func (a report) sameStates(b report) bool {
	return Equal(a.prints, b.prints) && connections.SameStates(a.conns, b.conns)
}

func (r *reporter) changed() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// loop writes after every burst of changes, and again when a write failed, its echo is
// due or a change of latencies alone was held back, until ctx is done.
func (r *reporter) loop(ctx context.Context) {
	retry := retryFirst
	later := time.NewTimer(0)
	<-later.C
	var next time.Time // when later fires; zero: it is not set
	passAt := func(at time.Time) {
		if next.IsZero() || at.Before(next) {
			next = at
			later.Reset(time.Until(at))
		}
	}
	debounce := time.NewTimer(0)
	<-debounce.C
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
			debounce.Reset(r.opts.Debounce)
			select {
			case <-ctx.Done():
				return
			case <-debounce.C:
			}
			// Changes that arrived while waiting are in this pass.
			select {
			case <-r.wake:
			default:
			}
		case <-later.C:
			next = time.Time{}
		}
		wrote, held, err := r.pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.opts.Log.Error(err, "writing the member's prints and connections", "retryIn", retry)
			passAt(time.Now().Add(retry))
			retry = min(2*retry, retryMax)
		case err == nil:
			retry = retryFirst
			if wrote {
				passAt(time.Now().Add(echoWait)) // see that the write stayed
			}
			if !held.IsZero() {
				passAt(held) // no change may come to wake the loop then
			}
		}
	}
}

// pass writes the report when it differs from what the Membership holds and from what
// this reporter last wrote into it; it says whether it wrote, or, when it held back a
// change of latencies alone, when that is due.
func (r *reporter) pass(ctx context.Context) (wrote bool, held time.Time, err error) {
	for _, k := range r.kinds {
		if !k.synced.Load() {
			return false, time.Time{}, nil
		}
	}
	m, synced, err := r.membership.get()
	if err != nil {
		return false, time.Time{}, err
	}
	if !synced {
		return false, time.Time{}, nil
	}
	if m == nil {
		r.written, r.writtenTo = report{}, "" // the hub has not made it yet, or took it away
		return false, time.Time{}, nil
	}
	prints, omitted := r.keeper.Report(m.Labels[straitv1.LabelClusterSet])
	if omitted != r.omitted && omitted > 0 {
		r.opts.Log.Info("the member holds objects of more ClusterSets than status.prints takes; left out", "clusterSets", omitted)
	}
	r.omitted = omitted
	conns := r.keeper.Connections()
	rep := report{prints: prints, conns: &conns}
	now := time.Now()
	write, held := r.due(m, rep, now)
	if !write {
		return false, held, nil
	}
	if err := r.apply(ctx, rep); err != nil {
		return false, time.Time{}, err
	}
	r.wrote(m.UID, rep, now)
	return true, time.Time{}, nil
}

// wrote records a successful write of rep into the Membership of UID uid.
func (r *reporter) wrote(uid types.UID, rep report, at time.Time) {
	r.written, r.writtenTo, r.writtenAt, r.heldAt = rep, uid, at, at
}

// due says whether rep is to be written into m: m holds another, and rep is not what
// was last written into it or that write's echo is overdue. A report that m holds
// already (another replica's write, or this one's before a restart) is taken as
// written. One that differs in latencies alone from what m holds, or from what it is
// about to hold (the last write, whose echo is on its way), waits until LatencyEvery
// after m last held this reporter's report: held is when.
func (r *reporter) due(m *straitv1.Membership, rep report, now time.Time) (write bool, held time.Time) {
	holds := report{prints: m.Status.Prints, conns: m.Status.Connections}
	if rep.same(holds) {
		r.written, r.writtenTo, r.writtenAt, r.heldAt = rep, m.UID, time.Time{}, now
		return false, time.Time{}
	}
	echoing := m.UID == r.writtenTo && !r.writtenAt.IsZero() && now.Sub(r.writtenAt) < echoWait
	if echoing && rep.same(r.written) {
		return false, time.Time{}
	}
	if rep.sameStates(holds) || echoing && rep.sameStates(r.written) {
		if at := r.heldAt.Add(r.opts.LatencyEvery); now.Before(at) {
			return false, at
		}
	}
	return true, time.Time{}
}

// apply writes status.prints and status.connections, and nothing else, under
// FieldManagerPrints. Connections of no Peer with a state are written as such (total
// and connected 0), so that the hub tells "none" from "no report".
func (r *reporter) apply(ctx context.Context, rep report) error {
	list := make([]any, len(rep.prints))
	for i, p := range rep.prints {
		entry, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&p)
		if err != nil {
			return err
		}
		list[i] = entry
	}
	conns, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rep.conns)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": straitv1.GroupVersion.String(),
		"kind":       "Membership",
		"metadata":   map[string]any{"name": straitv1.MembershipName, "namespace": r.opts.Namespace},
		"status":     map[string]any{"prints": list, "connections": conns},
	}}
	err = r.writer.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(straitv1.FieldManagerPrints), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("membership status.prints and status.connections: %w", err)
	}
	return nil
}
