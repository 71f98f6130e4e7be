package kubewatch

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// backoff is how Resuming waits between calls the API server did not answer: first,
// doubling up to max, each wait stretched by up to half of itself at random so that the
// nodes of a cluster do not all call back at once.
type backoff struct {
	first, max time.Duration
}

// defaultBackoff is 100 ms doubling to 2 s: an informer is current again within 2–3 s of
// its API server's return, and a node's agent (eight informers) calls a server that is
// gone about three times a second.
func defaultBackoff() backoff { return backoff{first: 100 * time.Millisecond, max: 2 * time.Second} }

// Resuming is lw with its List and Watch tried again, inside the call, while the API
// server does not answer, until it does or ctx ends. It implements
// cache.ListerWatcherWithContext as well.
func Resuming(lw cache.ListerWatcher) cache.ListerWatcher { return resumingWith(lw, defaultBackoff()) }

func resumingWith(lw cache.ListerWatcher, b backoff) cache.ListerWatcher {
	return &resuming{inner: cache.ToListerWatcherWithContext(lw), backoff: b}
}

type resuming struct {
	inner   cache.ListerWatcherWithContext
	backoff backoff
}

func (r *resuming) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	return retry(ctx, r.backoff, func() (runtime.Object, error) { return r.inner.ListWithContext(ctx, o) })
}

func (r *resuming) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return retry(ctx, r.backoff, func() (watch.Interface, error) { return r.inner.WatchWithContext(ctx, o) })
}

// List and Watch serve callers that pass no context (cache.ListerWatcher).
func (r *resuming) List(o metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), o)
}

func (r *resuming) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), o)
}

// retry calls fn until it returns something other than "not answered", or ctx ends.
func retry[T any](ctx context.Context, b backoff, fn func() (T, error)) (T, error) {
	wait := b.first
	for {
		v, err := fn()
		if err == nil || !unanswered(err) || ctx.Err() != nil {
			return v, err
		}
		t := time.NewTimer(wait + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
		wait = min(2*wait, b.max)
	}
}

// unanswered says whether err means the API server did not answer at all: the
// connection was refused, reset, cut or timed out, or there was no route to it. An
// error status (any apierrors.APIStatus) is an answer.
func unanswered(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false
	}
	var netErr net.Error
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH) ||
		(errors.As(err, &netErr) && netErr.Timeout())
}

// NewSharedIndexInformer is cache.NewSharedIndexInformer over Resuming(lw):
// controller-runtime's cache.Options.NewInformer.
func NewSharedIndexInformer(lw cache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers cache.Indexers) cache.SharedIndexInformer {
	return cache.NewSharedIndexInformer(Resuming(lw), obj, resync, indexers)
}
