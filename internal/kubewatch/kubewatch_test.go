package kubewatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

func refused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: &net.OpError{Op: "connect", Err: syscall.ECONNREFUSED}}
}

func TestUnanswered(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{refused(), true},
		{fmt.Errorf("Get \"https://10.99.0.1:443/api\": %w", refused()), true},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{&net.OpError{Op: "dial", Err: syscall.ENETUNREACH}, true},
		{fmt.Errorf("watch stream: %w", io.ErrUnexpectedEOF), true},
		{apierrors.NewForbidden(schema.GroupResource{Resource: "leases"}, "x", errors.New("no")), false},
		{apierrors.NewTooManyRequests("slow down", 1), false},
		{apierrors.NewServiceUnavailable("starting"), false},
		{context.Canceled, false},
		{errors.New("x509: certificate signed by unknown authority"), false},
		{nil, false},
	} {
		if got := unanswered(c.err); got != c.want {
			t.Errorf("unanswered(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// lister fails its first calls as scripted, then answers.
type lister struct {
	fails []error
	calls int
}

func (l *lister) next() error {
	l.calls++
	if len(l.fails) == 0 {
		return nil
	}
	err := l.fails[0]
	l.fails = l.fails[1:]
	return err
}

func (l *lister) List(metav1.ListOptions) (runtime.Object, error) {
	if err := l.next(); err != nil {
		return nil, err
	}
	return &corev1.ConfigMapList{}, nil
}

func (l *lister) Watch(metav1.ListOptions) (watch.Interface, error) {
	if err := l.next(); err != nil {
		return nil, err
	}
	return watch.NewEmptyWatch(), nil
}

var quick = backoff{first: time.Millisecond, max: 4 * time.Millisecond}

func TestResumingRetriesWhatWasNotAnswered(t *testing.T) {
	l := &lister{fails: []error{refused(), refused(), refused()}}
	lw := resumingWith(l, quick).(cache.ListerWatcherWithContext)
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{}); err != nil || l.calls != 4 {
		t.Errorf("List: %v after %d calls, want an answer on the 4th", err, l.calls)
	}
	l = &lister{fails: []error{refused(), &net.OpError{Op: "read", Err: syscall.ECONNRESET}}}
	lw = resumingWith(l, quick).(cache.ListerWatcherWithContext)
	if _, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{}); err != nil || l.calls != 3 {
		t.Errorf("Watch: %v after %d calls, want an answer on the 3rd", err, l.calls)
	}
}

func TestResumingPassesAnswersOn(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "leases"}, "x", errors.New("no"))
	busy := apierrors.NewTooManyRequests("slow down", 1)
	for _, err := range []error{forbidden, busy} {
		l := &lister{fails: []error{err}}
		if _, got := resumingWith(l, quick).(cache.ListerWatcherWithContext).ListWithContext(context.Background(), metav1.ListOptions{}); !errors.Is(got, err) || l.calls != 1 {
			t.Errorf("List answered %v: got %v after %d calls, want it at once", err, got, l.calls)
		}
	}
}

func TestResumingEndsWithItsContext(t *testing.T) {
	l := &lister{fails: make([]error, 1000)}
	for i := range l.fails {
		l.fails[i] = refused()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	lw := resumingWith(l, quick).(cache.ListerWatcherWithContext)
	if _, err := lw.WatchWithContext(ctx, metav1.ListOptions{}); !unanswered(err) || ctx.Err() == nil {
		t.Errorf("Watch returned %v before its context ended (%v)", err, ctx.Err())
	}
}
