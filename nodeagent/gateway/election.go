package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// LeaseName is the one Lease per cluster (in strait-system) whose holder is the active
// gateway.
const LeaseName = "strait-gateway"

// errLost: the Lease is someone else's now.
var errLost = errors.New("the Lease has another holder")

// Elector campaigns for the Lease as one gateway-capable node.
//
// A standby does not poll: it watches the Lease and sleeps until the holder's term, as
// measured on its own clock from when it saw the last renewal, has run out, or until
// the watch shows a release. Every write carries the resourceVersion it was computed
// from, so of two standbys racing for the same term only one can win.
type Elector struct {
	leases   coordinationclient.LeaseInterface
	identity string
	timing   Timing
	onChange func(active bool)

	mu sync.Mutex
	// active and until: this node holds the Lease, and its last renewal lets it act as
	// the active gateway until then (RenewDeadline after that renewal was sent).
	active bool
	until  time.Time
	// settled: the first campaign step is done (or took longer than RenewDeadline).
	settled bool
	// watched is the Lease as the watch saw it last (nil: none); seen counts changes.
	watched *coordinationv1.Lease
	seen    uint64
	wake    chan struct{}
}

// NewElector is an Elector for node identity; onChange is called (from the election
// goroutine) whenever this node becomes active or stops being active.
func NewElector(kube kubernetes.Interface, namespace, identity string, timing Timing, onChange func(active bool)) *Elector {
	return &Elector{leases: kube.CoordinationV1().Leases(namespace), identity: identity, timing: timing,
		onChange: onChange, wake: make(chan struct{}, 1)}
}

// Active says whether this node holds the Lease right now. It turns false by itself
// RenewDeadline after the last renewal, even if the election goroutine is stalled.
func (e *Elector) Active() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.active && time.Now().Before(e.until)
}

// Settled says whether the elector has made its first decision: it took the Lease, or
// saw another holder, or could not tell for RenewDeadline. Until then a restarted agent
// whose node still holds the Lease cannot know whether it is about to renew it.
func (e *Elector) Settled() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.settled
}

// Run campaigns until ctx ends, then releases the Lease if it holds it. Losing the Lease
// (say, the API server was unreachable past RenewDeadline) makes it a standby again.
func (e *Elector) Run(ctx context.Context) {
	var watching sync.WaitGroup
	watching.Go(func() { e.watch(ctx) })
	defer watching.Wait() // Run returns only once ctx has ended
	settle := time.AfterFunc(e.timing.RenewDeadline, e.settle)
	defer settle.Stop()
	for {
		held, renewed := e.campaign(ctx)
		if held == nil {
			return
		}
		if held = e.lead(ctx, held, renewed); held != nil {
			e.release(ctx, held)
			return
		}
	}
}

// campaign waits for the Lease to be free or expired and takes it; it returns the
// Lease as written and when that write was sent, or nil when ctx ended.
func (e *Elector) campaign(ctx context.Context) (*coordinationv1.Lease, time.Time) {
	log := logr.FromContextOrDiscard(ctx)
	var obs observation
	known, seen := false, uint64(0)
	for ctx.Err() == nil {
		if w, n := e.fromWatch(); n != seen {
			obs, known, seen = obs.next(w, time.Now()), true, n
		}
		if !known {
			l, err := e.get(ctx)
			if err != nil {
				log.V(1).Info("reading the gateway Lease", "error", err.Error())
				e.sleep(ctx, e.timing.RetryPeriod)
				continue
			}
			obs, known = obs.next(l, time.Now()), true
		}
		wait := obs.remaining(e.identity, e.timing.LeaseDuration, time.Now())
		if wait > 0 {
			e.settle()
			e.sleep(ctx, wait)
			continue
		}
		sent := time.Now()
		l, err := e.acquire(ctx, obs)
		e.settle()
		switch {
		case err == nil:
			if obs.holder() != "" && obs.holder() != e.identity {
				log.Info("took over the gateway Lease", "from", obs.holder(), "expiredFor", -wait)
			}
			return l, sent
		case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
			known = false // someone else wrote first: read who
		default:
			log.V(1).Info("taking the gateway Lease", "error", err.Error())
			e.sleep(ctx, e.timing.RetryPeriod)
		}
	}
	return nil, time.Time{}
}

// lead renews the Lease every RetryPeriod. It returns nil after stepping down (no
// renewal within RenewDeadline, or someone else holds the Lease) and the Lease as last
// written when ctx ends.
func (e *Elector) lead(ctx context.Context, held *coordinationv1.Lease, renewed time.Time) *coordinationv1.Lease {
	log := logr.FromContextOrDiscard(ctx)
	e.set(true, renewed.Add(e.timing.RenewDeadline))
	next := renewed.Add(e.timing.RetryPeriod)
	for {
		deadline := renewed.Add(e.timing.RenewDeadline)
		if until := time.Until(next); !e.sleep(ctx, min(until, time.Until(deadline))) {
			return held
		}
		if !time.Now().Before(deadline) {
			e.set(false, time.Time{})
			log.Info("stepped down: the gateway Lease was not renewed in time", "renewDeadline", e.timing.RenewDeadline)
			return nil
		}
		if time.Now().Before(next) {
			continue
		}
		sent := time.Now()
		rctx, cancel := context.WithDeadline(ctx, deadline)
		l, err := e.renew(rctx, held)
		cancel()
		switch {
		case err == nil:
			held, renewed, next = l, sent, sent.Add(e.timing.RetryPeriod)
			e.set(true, renewed.Add(e.timing.RenewDeadline))
		case errors.Is(err, errLost):
			e.set(false, time.Time{})
			log.Info("stepped down: the gateway Lease has another holder")
			return nil
		default:
			// Try again soon: more than one attempt fits into RenewDeadline.
			next = time.Now().Add(e.timing.RetryPeriod / 4)
			log.V(1).Info("renewing the gateway Lease", "error", err.Error())
		}
	}
}

// release steps down and clears the holder, so a standby's watch sees the Lease free
// at once instead of waiting for it to expire.
func (e *Elector) release(ctx context.Context, held *coordinationv1.Lease) {
	e.set(false, time.Time{})
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.timing.RenewDeadline)
	defer cancel()
	for range 2 {
		l := held.DeepCopy()
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = nil, ptr(int32(1)), &now
		_, err := e.leases.Update(rctx, l, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			if err != nil {
				logr.FromContextOrDiscard(ctx).Info("releasing the gateway Lease (it expires instead)", "error", err.Error())
			}
			return
		}
		// A renewal whose answer was lost to the cancellation went through: release
		// that one if it is still ours.
		cur, err := e.leases.Get(rctx, LeaseName, metav1.GetOptions{})
		if err != nil || holderOf(cur) != e.identity {
			return
		}
		held = cur
	}
}

// acquire writes this node as the holder onto the Lease as observed.
func (e *Elector) acquire(ctx context.Context, obs observation) (*coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timing.RenewDeadline)
	defer cancel()
	now := metav1.NewMicroTime(time.Now())
	if obs.lease == nil {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName}, Spec: e.spec(now)}
		return e.leases.Create(ctx, l, metav1.CreateOptions{})
	}
	l := obs.lease.DeepCopy()
	spec := e.spec(now)
	if holderOf(l) == e.identity {
		spec.AcquireTime, spec.LeaseTransitions = l.Spec.AcquireTime, l.Spec.LeaseTransitions
	} else {
		spec.LeaseTransitions = ptr(deref(l.Spec.LeaseTransitions) + 1)
	}
	l.Spec = spec
	return e.leases.Update(ctx, l, metav1.UpdateOptions{})
}

// renew writes a new renewTime onto the Lease as this node last wrote it. A conflict
// is only fatal when someone else holds the Lease now.
func (e *Elector) renew(ctx context.Context, held *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	for range 2 {
		l := held.DeepCopy()
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = &now, ptr(e.seconds())
		u, err := e.leases.Update(ctx, l, metav1.UpdateOptions{})
		switch {
		case err == nil:
			return u, nil
		case apierrors.IsNotFound(err):
			return e.recreate(ctx)
		case !apierrors.IsConflict(err):
			return nil, err
		}
		cur, err := e.leases.Get(ctx, LeaseName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return e.recreate(ctx)
		case err != nil:
			return nil, err
		case holderOf(cur) != e.identity:
			return nil, fmt.Errorf("%w: %q", errLost, holderOf(cur))
		}
		held = cur
	}
	return nil, errors.New("the gateway Lease changed under every renewal attempt")
}

// recreate creates the Lease again after someone deleted it while this node held it:
// standbys wait a whole term after seeing it go, so doing it within RenewDeadline keeps
// the gateway here.
func (e *Elector) recreate(ctx context.Context) (*coordinationv1.Lease, error) {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName}, Spec: e.spec(metav1.NewMicroTime(time.Now()))}
	c, err := e.leases.Create(ctx, l, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := e.leases.Get(ctx, LeaseName, metav1.GetOptions{})
		if gerr != nil {
			return nil, gerr
		}
		if holderOf(cur) != e.identity {
			return nil, fmt.Errorf("%w: %q", errLost, holderOf(cur))
		}
		return cur, nil
	}
	return c, err
}

func (e *Elector) spec(now metav1.MicroTime) coordinationv1.LeaseSpec {
	return coordinationv1.LeaseSpec{HolderIdentity: ptr(e.identity), LeaseDurationSeconds: ptr(e.seconds()),
		AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr(int32(0))}
}

// seconds is LeaseDuration in the Lease's unit (Timing.Validate refuses fractions).
func (e *Elector) seconds() int32 { return int32(e.timing.LeaseDuration / time.Second) }

func (e *Elector) get(ctx context.Context) (*coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timing.RenewDeadline)
	defer cancel()
	l, err := e.leases.Get(ctx, LeaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return l, err
}

func (e *Elector) set(active bool, until time.Time) {
	e.mu.Lock()
	changed := e.active != active
	e.active, e.until, e.settled = active, until, true
	e.mu.Unlock()
	if changed && e.onChange != nil {
		e.onChange(active)
	}
}

func (e *Elector) settle() {
	e.mu.Lock()
	e.settled = true
	e.mu.Unlock()
}

// sleep waits for d, a change seen by the watch, or the end of ctx; false: ctx ended.
func (e *Elector) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-e.wake:
	}
	return true
}

func holderOf(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func ptr[T any](v T) *T { return &v }

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
