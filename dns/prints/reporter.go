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
)

// DefaultDebounce is how long the reporter gathers changes before it writes.
const DefaultDebounce = 100 * time.Millisecond

// Options of Run.
type Options struct {
	// Namespace of the Membership; empty is strait-system.
	Namespace string
	// Debounce gathers a burst of changes into one write; 0 is DefaultDebounce.
	Debounce time.Duration
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

// Run keeps the Membership's status.prints, through cfg, until ctx is done. It writes
// once every kind has been listed and the Membership exists, then whenever the prints
// change; a failed write is logged and tried again. It returns an error only when it
// cannot start.
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

// reporter writes the keeper's prints into the Membership's status.
type reporter struct {
	opts       Options
	keeper     *Keeper
	kinds      []*keeperStore
	membership *membershipStore
	writer     client.Client
	wake       chan struct{}

	// What the last successful write wrote, into which Membership, and when.
	written   []straitv1.MemberPrint
	writtenTo types.UID
	writtenAt time.Time
	// omitted is how many ClusterSets the last report left out.
	omitted int
}

func (r *reporter) changed() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// loop writes after every burst of changes, and again when a write failed or its echo
// is due, until ctx is done.
func (r *reporter) loop(ctx context.Context) {
	retry := retryFirst
	later := time.NewTimer(0)
	<-later.C
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
		}
		wrote, err := r.pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			r.opts.Log.Error(err, "writing the member's prints", "retryIn", retry)
			later.Reset(retry)
			retry = min(2*retry, retryMax)
		case err == nil:
			retry = retryFirst
			if wrote {
				later.Reset(echoWait) // see that the write stayed
			}
		}
	}
}

// pass writes the prints when they differ from what the Membership holds and from what
// this reporter last wrote into it; it says whether it wrote.
func (r *reporter) pass(ctx context.Context) (bool, error) {
	for _, k := range r.kinds {
		if !k.synced.Load() {
			return false, nil
		}
	}
	m, synced, err := r.membership.get()
	if err != nil {
		return false, err
	}
	if !synced {
		return false, nil
	}
	if m == nil {
		r.written, r.writtenTo = nil, "" // the hub has not made it yet, or took it away
		return false, nil
	}
	prints, omitted := r.keeper.Report(m.Labels[straitv1.LabelClusterSet])
	if omitted != r.omitted && omitted > 0 {
		r.opts.Log.Info("the member holds objects of more ClusterSets than status.prints takes; left out", "clusterSets", omitted)
	}
	r.omitted = omitted
	if !r.due(m, prints) {
		return false, nil
	}
	if err := r.apply(ctx, prints); err != nil {
		return false, err
	}
	r.written, r.writtenTo, r.writtenAt = prints, m.UID, time.Now()
	return true, nil
}

// due says whether prints are to be written into m: m holds others, and they are not
// what was last written into it or that write's echo is overdue. Prints that m holds
// already (another replica's write, or this one's before a restart) are taken as
// written.
func (r *reporter) due(m *straitv1.Membership, prints []straitv1.MemberPrint) bool {
	if Equal(m.Status.Prints, prints) {
		r.written, r.writtenTo, r.writtenAt = prints, m.UID, time.Time{}
		return false
	}
	if m.UID != r.writtenTo || !Equal(prints, r.written) {
		return true
	}
	return r.writtenAt.IsZero() || time.Since(r.writtenAt) >= echoWait
}

// apply writes status.prints, and nothing else, under FieldManagerPrints.
func (r *reporter) apply(ctx context.Context, prints []straitv1.MemberPrint) error {
	list := make([]any, len(prints))
	for i, p := range prints {
		entry, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&p)
		if err != nil {
			return err
		}
		list[i] = entry
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": straitv1.GroupVersion.String(),
		"kind":       "Membership",
		"metadata":   map[string]any{"name": straitv1.MembershipName, "namespace": r.opts.Namespace},
		"status":     map[string]any{"prints": list},
	}}
	err := r.writer.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(straitv1.FieldManagerPrints), client.ForceOwnership)
	if err != nil {
		return fmt.Errorf("membership status.prints: %w", err)
	}
	return nil
}
