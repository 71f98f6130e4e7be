package source

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// TestListAndWatchErrorsAreReported: every failed List and Watch is reported, one that
// succeeds is not, and neither is one that failed because its caller gave up.
func TestListAndWatchErrorsAreReported(t *testing.T) {
	forbidden := errors.New(`serviceimports.multicluster.x-k8s.io is forbidden`)
	fail := true
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, _ metav1.ListOptions) (runtime.Object, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if fail {
				return nil, forbidden
			}
			return &metav1.List{}, nil
		},
		WatchFuncWithContext: func(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if fail {
				return nil, forbidden
			}
			return watch.NewEmptyWatch(), nil
		},
	}
	var reported []error
	r := reportingErrors(lw, func(err error) { reported = append(reported, err) }).(toolscache.ListerWatcherWithContext)
	ctx := context.Background()
	_, _ = r.ListWithContext(ctx, metav1.ListOptions{})
	_, _ = r.WatchWithContext(ctx, metav1.ListOptions{})
	if len(reported) != 2 || !errors.Is(reported[0], forbidden) || !errors.Is(reported[1], forbidden) {
		t.Fatalf("a failed List and Watch reported %v, want the error twice", reported)
	}
	fail = false
	_, _ = r.ListWithContext(ctx, metav1.ListOptions{})
	_, _ = r.WatchWithContext(ctx, metav1.ListOptions{})
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = r.ListWithContext(canceled, metav1.ListOptions{})
	if len(reported) != 2 {
		t.Errorf("a successful List and Watch, then one given up, reported %v", reported[2:])
	}
}
