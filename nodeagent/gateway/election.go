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
	// confirm, when set, asks the other gateway-capable nodes whether the API server
	// answers them: see WithConfirm.
	confirm func(ctx context.Context) bool
	// fence, when set, is told the end of this node's term: see WithFence.
	fence func(until time.Time) error
	// report, when set, hears of renewals and step-downs: see WithReport.
	report Report

	mu sync.Mutex
	// active and until: this node holds the Lease, and its last renewal lets it act as
	// the active gateway until then (RenewDeadline after that renewal was sent).
	active bool
	until  time.Time
	// settled: the first campaign step is done (or took longer than RenewDeadline).
	settled bool
	// standbyOf: the other node a campaign last saw hold the Lease ("": none, or not
	// read yet).
	standbyOf string
	// held: past RenewDeadline without an answer from the API server, still active.
	held bool
	// termEnd: the last renewal's term ends then for every standby, less fenceMargin;
	// fenced is what fence last took; fenceErr: its last write failed (nil once one
	// succeeds); fenceWritten: a write has succeeded.
	termEnd, fenced time.Time
	fenceErr        error
	fenceWritten    bool
	// takeoverFrom and takeoverOf: when this node last took the Lease over from another
	// holder, the moment that holder's term ran out or its release was seen (this node's
	// clock), and who it was.
	takeoverFrom time.Time
	takeoverOf   string
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

// WithConfirm lets the holder hold through an API server that does not answer it, for
// as long as confirm says that it does not answer anyone who could take the Lease over
// (every other gateway-capable node, asked over the cluster's network). confirm must
// return within the time it is given; without it, or when it says no, the holder steps
// down at RenewDeadline as always. It returns e.
func (e *Elector) WithConfirm(confirm func(ctx context.Context) bool) *Elector {
	e.confirm = confirm
	return e
}

// Report is what the elector tells about its term, from its goroutine, for metrics:
// each renewal's round trip and whether the API server took it, and each step-down
// with its reason (one of the StepDown constants). Either may be nil.
type Report struct {
	Renewal  func(took time.Duration, ok bool)
	StepDown func(reason string)
}

// Why a holder stepped down (Report.StepDown).
const (
	// StepDownLate: no renewal within RenewDeadline (the API server or this agent slow,
	// or the API server unreachable for this node alone).
	StepDownLate = "renew-deadline"
	// StepDownOtherHolder: a renewal found the Lease held by another node.
	StepDownOtherHolder = "other-holder"
	// StepDownRefused: the API server refused a renewal while the holder held through it.
	StepDownRefused = "refused"
	// StepDownNotConfirmed: holding through an unanswering API server, another gateway
	// reached it or could not be asked.
	StepDownNotConfirmed = "not-confirmed"
	// StepDownFence: this node's fence could not be written.
	StepDownFence = "fence"
)

// StepDownReasons are every reason Report.StepDown may be told.
var StepDownReasons = []string{StepDownLate, StepDownOtherHolder, StepDownRefused, StepDownNotConfirmed, StepDownFence}

// WithReport has the elector tell r of its renewals and step-downs. It returns e.
func (e *Elector) WithReport(r Report) *Elector {
	e.report = r
	return e
}

func (e *Elector) renewed(took time.Duration, ok bool) {
	if e.report.Renewal != nil {
		e.report.Renewal(took, ok)
	}
}

func (e *Elector) steppedDown(reason string) {
	if e.report.StepDown != nil {
		e.report.StepDown(reason)
	}
}

// fenceMargin is how much earlier than a standby's own count the fence ends a term.
const fenceMargin = 50 * time.Millisecond

// WithFence has the elector tell fence, from its goroutine, until when this node's data
// path may carry traffic: a fence in the kernel (kernel.Fencer) enforces it also when
// the agent is gone. While the node renews, that is the end of the last renewal's term
// as any standby counts it (LeaseDuration after the renewal was sent), less a margin;
// while it holds through an API server that answers no one, as long as it stays active;
// once it has stepped down because someone else holds the Lease, nothing: zero.
// Stepping down at the renew deadline (no renewal in time) and releasing the Lease on
// shutdown leave the term as it was: the old data path carries traffic until the new
// gateway has converged, or until this node has taken its own Lease again, for at most
// the rest of the term.
//
// The fence fails closed: a node whose fence cannot be written is not active. When fence
// returns an error for a term that would make or keep the node active, the elector does
// not become (or stops being) active, releases the Lease so that a standby takes over
// at once, and takes it again only once a write of the fence succeeds: before taking
// the Lease after a failure, and before its first time, it writes a closed fence (it
// holds nothing then) and campaigns only if that worked. The kernel keeps the term it
// last took, which runs out by itself. It returns e.
func (e *Elector) WithFence(fence func(until time.Time) error) *Elector {
	e.fence = fence
	return e
}

// Probe asks the API server for the Lease, as a peer's confirm does: nil when it
// answered (whatever the answer).
func (e *Elector) Probe(ctx context.Context) error { return probe(ctx, e.leases) }

// Probe is Elector.Probe for a node that does not campaign: the agent answers its peers
// with it whether or not it is gateway-capable.
func Probe(ctx context.Context, kube kubernetes.Interface, namespace string) error {
	return probe(ctx, kube.CoordinationV1().Leases(namespace))
}

func probe(ctx context.Context, leases coordinationclient.LeaseInterface) error {
	_, err := leases.Get(ctx, LeaseName, metav1.GetOptions{})
	if err != nil && unanswered(err) {
		return err
	}
	return nil
}

// Active says whether this node holds the Lease right now. It turns false by itself
// RenewDeadline after the last renewal, even if the election goroutine is stalled.
func (e *Elector) Active() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.active && time.Now().Before(e.until)
}

// Holding says whether this node is the active gateway without having renewed the Lease
// within RenewDeadline, because the API server does not answer.
func (e *Elector) Holding() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.held && e.active && time.Now().Before(e.until)
}

func (e *Elector) holding(h bool) {
	e.mu.Lock()
	e.held = h
	e.mu.Unlock()
}

// Settled says whether the elector has made its first decision: it took the Lease, or
// saw another holder, or could not tell for RenewDeadline. Until then a restarted agent
// whose node still holds the Lease cannot know whether it is about to renew it.
func (e *Elector) Settled() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.settled
}

// StandbyOf names the other node this elector, campaigning, last saw hold the Lease: ""
// when it holds the Lease itself, saw it free, or has not read it yet. A release is
// timed (Takeover) only by a standby that saw the holder before it.
func (e *Elector) StandbyOf() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.standbyOf
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
	// releasedBy released the Lease when this campaign saw it at releasedAt.
	var releasedBy string
	var releasedAt time.Time
	// restart: a Lease may have been there since obs was taken without this campaign
	// seeing it (see below), so the next sight starts a whole term, even of no Lease.
	see := func(l *coordinationv1.Lease, restart bool) {
		before := obs.holder()
		if restart {
			obs.at = time.Time{}
		}
		obs = obs.next(l, time.Now())
		if before != "" && before != e.identity && obs.holder() == "" {
			releasedBy, releasedAt = before, obs.at
		}
		e.mu.Lock()
		if e.standbyOf = obs.holder(); e.standbyOf == e.identity {
			e.standbyOf = ""
		}
		e.mu.Unlock()
	}
	// recount: the API server did not answer a write; the holder may be holding through
	// that (see lead), so its term counts afresh from the next sight of the Lease, a
	// read's or the watch's (an API server back from an outage lists it again, unchanged:
	// counted from the sight before, the term had run out before the holder could renew).
	recount := false
	// stale: a write was refused because the Lease was written since obs (a conflict, or
	// one there when none was seen). Its holder may have found it deleted since and be
	// about to recreate it, within its term: a read that shows none again must not
	// count from the older sight of none.
	stale := false
	for ctx.Err() == nil {
		if w, n := e.fromWatch(); n != seen {
			// A deletion last: a Lease was there since the last sight, which may have
			// been of none (a create and a delete seen at once).
			see(w, w == nil || stale || recount)
			known, seen, stale, recount = true, n, false, false
		}
		if !known {
			l, err := e.get(ctx)
			if err != nil {
				log.V(1).Info("reading the gateway Lease", "error", err.Error())
				e.sleep(ctx, e.timing.RetryPeriod)
				continue
			}
			see(l, stale || recount)
			known, stale, recount = true, false, false
		}
		checked := time.Now()
		wait := obs.remaining(e.identity, e.timing.LeaseDuration, checked)
		if wait > 0 {
			e.settle()
			e.sleep(ctx, wait)
			continue
		}
		if err := e.fenceWorks(obs.holder() == e.identity); err != nil {
			e.settle()
			log.Info("not taking the gateway Lease: this node's fence cannot be written", "error", err.Error())
			e.sleep(ctx, e.timing.RetryPeriod)
			continue
		}
		sent := time.Now()
		l, err := e.acquire(ctx, obs)
		switch {
		case err == nil:
			e.settle()
			e.mu.Lock()
			e.standbyOf = ""
			e.mu.Unlock()
			switch prev := obs.holder(); {
			case prev != "" && prev != e.identity:
				log.Info("took over the gateway Lease", "from", prev, "expiredFor", -wait)
				e.tookOver(checked.Add(wait), prev) // wait <= 0: the term ran out -wait before it was checked
			case prev == "" && releasedBy != "":
				log.Info("took over the released gateway Lease", "from", releasedBy, "releasedFor", sent.Sub(releasedAt))
				e.tookOver(releasedAt, releasedBy)
			default:
				// Its own Lease again (after stepping down on a renewal that came too
				// late), or a first one: no failover. An older takeover kept here was
				// timed again from its start, and the failover SLO got 58 s and 2m45s.
				e.tookOver(time.Time{}, "")
			}
			return l, sent
		case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
			// Someone else wrote first, or the watch's first list came from a stale
			// cache: read who holds it. Not settled yet: this standby has not seen the
			// holder, so it could not time a release it is about to see.
			known, stale = false, true
		case unanswered(err):
			// The API server does not answer, and a holder holds through that: once it
			// answers again, the holder's next renewal (every RetryPeriod) must come
			// before this standby's next try, so read first and count a whole term.
			log.V(1).Info("taking the gateway Lease", "error", err.Error())
			known, recount = false, true
			e.sleep(ctx, e.timing.RetryPeriod)
		default:
			log.V(1).Info("taking the gateway Lease", "error", err.Error())
			e.sleep(ctx, e.timing.RetryPeriod)
		}
	}
	return nil, time.Time{}
}

func (e *Elector) tookOver(from time.Time, previous string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.takeoverFrom, e.takeoverOf = from, previous
}

// Takeover says when the term of the holder this node last took the Lease over from
// ended, by this node's clock (its expiry as this standby counted it, or its release as
// the watch showed it), and who held it; zero when this node has taken no Lease over
// from another (its first Lease, or its own again).
func (e *Elector) Takeover() (from time.Time, previous string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.takeoverFrom, e.takeoverOf
}

// lead renews the Lease every RetryPeriod. It returns nil after stepping down (someone
// else holds the Lease, or the API server refused the renewal) and the Lease as last
// written when ctx ends.
//
// An API server that does not answer (down, unreachable, its storage failing) is no
// reason to step down if it answers no other gateway either (WithConfirm): nobody can
// take the Lease over through it. Past RenewDeadline the holder then holds, staying
// active and trying to renew every RetryPeriod, so a cluster whose API server is down
// keeps its data plane; it steps down as soon as another gateway reaches the API server
// (which could take the Lease), cannot be asked, or its own renewal shows another holder.
func (e *Elector) lead(ctx context.Context, held *coordinationv1.Lease, renewed time.Time) *coordinationv1.Lease {
	log := logr.FromContextOrDiscard(ctx)
	// unfenced steps down from a term whose fence could not be written (see WithFence).
	unfenced := func(err error) *coordinationv1.Lease {
		e.holding(false)
		e.steppedDown(StepDownFence)
		log.Info("stepped down: this node's fence cannot be written", "error", err.Error())
		e.release(ctx, held)
		// Not straight back to campaigning (the release wakes it): a fence that takes a
		// closed term but not an open one would take and release the Lease in a loop.
		select {
		case <-ctx.Done():
		case <-time.After(e.timing.RetryPeriod):
		}
		return nil
	}
	if err := e.renewedAt(renewed); err != nil {
		return unfenced(err)
	}
	next := renewed.Add(e.timing.RetryPeriod)
	// holding: past RenewDeadline, confirmed; refused: the last renewal got an answer
	// that was no (nothing to hold through).
	holding, refused := false, false
	for {
		deadline := renewed.Add(e.timing.RenewDeadline)
		wait := time.Until(next)
		if !holding {
			wait = min(wait, time.Until(deadline))
		}
		if !e.sleep(ctx, wait) {
			return held
		}
		if !holding && !time.Now().Before(deadline) {
			// Active while the other gateways are asked, for at most what is left of
			// the term before a standby may take over.
			if !refused && e.confirm != nil {
				if err := e.set(true, deadline.Add(e.confirmBudget())); err != nil {
					return unfenced(err)
				}
			}
			if refused || !e.mayHold(ctx) {
				e.stepDownForTheTerm()
				e.steppedDown(StepDownLate)
				log.Info("stepped down: the gateway Lease was not renewed in time", "renewDeadline", e.timing.RenewDeadline)
				return nil
			}
			holding = true
			e.holding(true)
			if err := e.set(true, e.holdUntil()); err != nil {
				return unfenced(err)
			}
			log.Info("the API server answers neither this node nor any other gateway: holding the gateway until it answers",
				"renewDeadline", e.timing.RenewDeadline)
		}
		if time.Now().Before(next) {
			continue
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, e.timing.RenewDeadline)
		l, err := e.renew(rctx, held)
		cancel()
		e.renewed(time.Since(sent), err == nil)
		switch {
		case err == nil:
			refused = false
			if holding {
				holding = false
				e.holding(false)
				log.Info("the API server answers again: renewed the gateway Lease", "heldFor", time.Since(deadline).Round(time.Millisecond))
			}
			held, renewed, next = l, sent, sent.Add(e.timing.RetryPeriod)
			if err := e.renewedAt(renewed); err != nil {
				return unfenced(err)
			}
		case errors.Is(err, errLost):
			e.holding(false)
			e.stepDown()
			e.steppedDown(StepDownOtherHolder)
			log.Info("stepped down: the gateway Lease has another holder")
			return nil
		case holding && !unanswered(err):
			e.holding(false)
			e.stepDown()
			e.steppedDown(StepDownRefused)
			log.Info("stepped down: the API server refused to renew the gateway Lease", "error", err.Error())
			return nil
		case holding:
			// Still the holder as far as anyone can tell, while the other gateways
			// confirm it; Active stays true only while this goroutine keeps trying (a
			// stalled one stops being active).
			if !e.mayHold(ctx) {
				e.holding(false)
				e.stepDown()
				e.steppedDown(StepDownNotConfirmed)
				log.Info("stepped down: another gateway reaches the API server, or could not be asked")
				return nil
			}
			next = time.Now().Add(e.timing.RetryPeriod)
			if err := e.set(true, e.holdUntil()); err != nil {
				return unfenced(err)
			}
			log.V(1).Info("renewing the gateway Lease while holding", "error", err.Error())
		default:
			// Try again soon: more than one attempt fits into RenewDeadline.
			refused = !unanswered(err)
			next = time.Now().Add(e.timing.RetryPeriod / 4)
			log.V(1).Info("renewing the gateway Lease", "error", err.Error())
		}
	}
}

// mayHold asks confirm, within what is left of the term after the renew deadline, so
// that a holder told no has stepped down before any standby may take over.
func (e *Elector) mayHold(ctx context.Context) bool {
	if e.confirm == nil {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, e.confirmBudget())
	defer cancel()
	return e.confirm(cctx) && cctx.Err() == nil
}

// confirmBudget is the time confirm gets: the term's rest after RenewDeadline, less a
// margin.
func (e *Elector) confirmBudget() time.Duration {
	return max(e.timing.LeaseDuration-e.timing.RenewDeadline-50*time.Millisecond, 50*time.Millisecond)
}

// holdUntil is how long a holding elector stays active without another attempt: one
// retry period, one renewal that times out and one confirm, so that Active does not
// flicker between attempts, while a stalled elector still stops being active.
func (e *Elector) holdUntil() time.Time {
	return time.Now().Add(e.timing.RetryPeriod + e.timing.RenewDeadline + e.confirmBudget())
}

// unanswered says whether err means the API server gave no answer to act on: no
// response (down, unreachable, timed out), or one saying it cannot serve now (5xx, 429).
// Any other answer (forbidden, not found after recreation failed, invalid) is a refusal.
func unanswered(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	code := status.Status().Code
	return code == 0 || code >= 500 || code == 429
}

// release steps down and clears the holder, so a standby's watch sees the Lease free
// at once instead of waiting for it to expire.
func (e *Elector) release(ctx context.Context, held *coordinationv1.Lease) {
	e.mu.Lock()
	keep := e.fenced
	e.mu.Unlock()
	_ = e.setTerm(false, time.Time{}, keep) // keep is what the fence holds: no write
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

// renewedAt makes this node active for RenewDeadline after a renewal sent then, and its
// data path for the renewal's term; an error: the fence could not be written, and the
// node is not active.
func (e *Elector) renewedAt(sent time.Time) error {
	e.mu.Lock()
	e.termEnd = sent.Add(e.timing.LeaseDuration - fenceMargin)
	e.mu.Unlock()
	return e.set(true, sent.Add(e.timing.RenewDeadline))
}

// stepDown makes this node not active and closes its fence. A fence that cannot be
// written keeps the term it last took, which runs out by itself; the campaign writes it
// again before it takes the Lease (fenceWorks).
func (e *Elector) stepDown() { _ = e.set(false, time.Time{}) }

// stepDownForTheTerm makes this node not active and leaves its fence to the end of the
// last renewal's term (no write), as a release does: no standby may take over before
// that term has run out, so the data path may carry traffic meanwhile, and a node that
// takes its own Lease again within it (its API server back from a restart, or past a
// burst of 429s and 5xx) never stopped carrying it. Closing the fence at the step-down
// cut the data path for the whole retake.
func (e *Elector) stepDownForTheTerm() {
	e.mu.Lock()
	keep := e.termEnd
	if keep.After(e.fenced) {
		keep = e.fenced // what the fence holds: never open it wider than it is
	}
	e.mu.Unlock()
	_ = e.setTerm(false, time.Time{}, keep)
}

// set makes this node active until until, or not active; its data path may carry
// traffic as long as it is active and until its last renewal's term ends. An error: the
// fence could not be written (see setTerm).
func (e *Elector) set(active bool, until time.Time) error {
	var fence time.Time
	if active {
		e.mu.Lock()
		fence = until
		if e.termEnd.After(fence) {
			fence = e.termEnd
		}
		e.mu.Unlock()
	}
	return e.setTerm(active, until, fence)
}

// setTerm tells the fence what changed, then sets the state, then tells onChange: the
// fence first, so that a node becoming active has its data path open before anyone (its
// own passes included) reads it as active. It fails closed: when the fence cannot be
// written, the node is not active, whatever was asked, and the error is returned; the
// kernel keeps the term it last took.
func (e *Elector) setTerm(active bool, until, fence time.Time) error {
	e.mu.Lock()
	refence := e.fence != nil && !fence.Equal(e.fenced)
	e.mu.Unlock()
	var err error
	if refence {
		err = e.fence(fence)
	}
	e.mu.Lock()
	switch {
	case err != nil:
		e.fenceErr = err
		active, until = false, time.Time{}
	case refence:
		e.fenced, e.fenceErr, e.fenceWritten = fence, nil, true
	}
	changed := e.active != active
	e.active, e.until, e.settled = active, until, true
	if !active && fence.IsZero() {
		e.termEnd = time.Time{}
	}
	e.mu.Unlock()
	if changed && e.onChange != nil {
		e.onChange(active)
	}
	return err
}

// fenceWorks says, before this node takes the Lease, whether its fence can be written:
// after a failed write, or when none has been written yet, it writes a closed fence (the
// node holds nothing while it campaigns) and says whether that worked. A node the Lease
// still names (its agent restarted) skips the first one: closing would stop the data
// path it still runs; it retakes the Lease and steps down if the fence then fails.
func (e *Elector) fenceWorks(named bool) error {
	e.mu.Lock()
	check := e.fence != nil && (e.fenceErr != nil || !e.fenceWritten && !named)
	e.mu.Unlock()
	if !check {
		return nil
	}
	err := e.fence(time.Time{})
	e.mu.Lock()
	if e.fenceErr = err; err == nil {
		e.fenced, e.fenceWritten = time.Time{}, true
	}
	e.mu.Unlock()
	return err
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
