package hubcmd

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// retryTransient runs fn until it succeeds, fails with an error that trying again
// cannot mend, or budget has passed, waiting from 250 ms doubling up to 5 s between
// tries; it returns the last error. At startup the API server may not answer yet: on a
// new node the kube-proxy may not have programmed the kubernetes Service's ClusterIP
// ("network is unreachable"), a control plane may be restarting, or the other replica
// may be writing the same Secret (a conflict). Failing at once left strait hub to the
// kubelet's crash-loop back-off, 10 s and more.
func retryTransient(ctx context.Context, log logr.Logger, what string, budget time.Duration, fn func() error) error {
	deadline := time.Now().Add(budget)
	wait := 250 * time.Millisecond
	for {
		err := fn()
		if err == nil || !transient(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		log.Info("retrying", "what", what, "in", wait, "error", err.Error())
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// transient says whether trying again may mend err: no answer from the API server at all,
// or an answer that says to come back (a conflict, a timeout, too many requests, an
// unavailable or failing server). A refusal (forbidden, invalid, not found) is final.
func transient(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true
	}
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsServerTimeout(err) ||
		apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsInternalError(err)
}
