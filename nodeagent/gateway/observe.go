package gateway

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/straitnet/strait/internal/kubewatch"
)

// observation is the Lease as a standby last saw it change, and when by its own clock:
// the holder's term is counted from then, never from the renewTime the holder wrote,
// so clocks of different nodes need not agree (only run at the same rate).
type observation struct {
	lease *coordinationv1.Lease // nil: there is none
	at    time.Time
}

// next is the observation after seeing l at now: a new resourceVersion (or the Lease
// appearing or going) restarts the count; the same one keeps it.
func (o observation) next(l *coordinationv1.Lease, now time.Time) observation {
	if o.at.IsZero() || (l == nil) != (o.lease == nil) || (l != nil && l.ResourceVersion != o.lease.ResourceVersion) {
		return observation{lease: l, at: now}
	}
	return o
}

func (o observation) holder() string { return holderOf(o.lease) }

// remaining is how long self must still wait before taking the Lease: nothing when it
// is free or already self's (a previous process of this node held it), the rest of the
// holder's term otherwise. A Lease that was deleted, or is not there yet, counts as a
// term of own's length from when that was seen: a holder that still believes in its
// term recreates it within its renew deadline.
func (o observation) remaining(self string, own time.Duration, now time.Time) time.Duration {
	term := own
	if o.lease != nil {
		switch h := o.holder(); {
		case h == "" || h == self:
			return 0
		case o.lease.Spec.LeaseDurationSeconds != nil && *o.lease.Spec.LeaseDurationSeconds > 0:
			term = time.Duration(*o.lease.Spec.LeaseDurationSeconds) * time.Second
		}
	}
	return o.at.Add(term).Sub(now)
}

// watch keeps the latest Lease in e.watched and wakes the campaign on every change,
// until ctx ends.
func (e *Elector) watch(ctx context.Context) {
	one := fields.OneTermEqualSelector("metadata.name", LeaseName).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = one
			return e.leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = one
			return e.leases.Watch(ctx, o)
		},
	}
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{ListerWatcher: kubewatch.Resuming(lw), ObjectType: &coordinationv1.Lease{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { e.saw(o) },
			UpdateFunc: func(_, o any) { e.saw(o) },
			DeleteFunc: func(any) { e.saw(nil) },
		}})
	informer.RunWithContext(ctx)
}

func (e *Elector) saw(o any) {
	l, _ := o.(*coordinationv1.Lease)
	e.mu.Lock()
	e.watched = l
	e.seen++
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// fromWatch is the latest Lease the watch saw and the count of changes so far (0: none
// seen yet).
func (e *Elector) fromWatch() (*coordinationv1.Lease, uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.watched, e.seen
}
