package hubcmd

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// strait hub's first start on a new node, before its kube-proxy serves the API server's
// ClusterIP, fails on "network is unreachable": it tries again instead of exiting; a
// refusal from the API server ends it at once; the budget bounds the tries.
func TestRetryTransient(t *testing.T) {
	unreachable := fmt.Errorf("dial tcp 10.0.0.1:443: %w", syscall.ENETUNREACH)
	secret := schema.GroupResource{Resource: "secrets"}
	forbidden := apierrors.NewForbidden(secret, "strait-hub-webhook-cert", errors.New("RBAC"))
	conflict := apierrors.NewConflict(secret, "strait-hub-webhook-cert", errors.New("modified"))
	for _, tc := range []struct {
		name      string
		errs      []error // what the tries return, nil after
		budget    time.Duration
		wantTries int
		wantErr   error
	}{
		{"unreachable twice, then issued", []error{unreachable, unreachable}, time.Minute, 3, nil},
		{"a conflict with the other replica, then issued", []error{conflict}, time.Minute, 2, nil},
		{"forbidden is final", []error{forbidden, nil}, time.Minute, 1, forbidden},
		{"unreachable past the budget", []error{unreachable, unreachable, unreachable, unreachable}, 300 * time.Millisecond, 2, unreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tries := 0
			err := retryTransient(context.Background(), logr.Discard(), "test", tc.budget, func() error {
				tries++
				if tries <= len(tc.errs) {
					return tc.errs[tries-1]
				}
				return nil
			})
			if tries != tc.wantTries || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("%d tries, error %v; want %d tries, error %v", tries, err, tc.wantTries, tc.wantErr)
			}
		})
	}
}
