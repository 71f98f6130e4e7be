package source

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// reporting is a ListerWatcher that tells report about every List and Watch that
// failed (each try, under kubewatch.Resuming's retries), but not about its own end: while
// they fail, the snapshot being served is what the last successful list and watch saw.
type reporting struct {
	inner  toolscache.ListerWatcherWithContext
	report func(error)
}

func reportingErrors(lw toolscache.ListerWatcher, report func(error)) toolscache.ListerWatcher {
	return &reporting{inner: toolscache.ToListerWatcherWithContext(lw), report: report}
}

func (r *reporting) failed(ctx context.Context, err error) {
	if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		r.report(err)
	}
}

func (r *reporting) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	obj, err := r.inner.ListWithContext(ctx, o)
	r.failed(ctx, err)
	return obj, err
}

func (r *reporting) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	w, err := r.inner.WatchWithContext(ctx, o)
	r.failed(ctx, err)
	return w, err
}

func (r *reporting) List(o metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), o)
}

func (r *reporting) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), o)
}
