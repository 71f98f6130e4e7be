package daemonbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
)

// Self is this process's entry: daemon (straitv1.DaemonAgent, DaemonDNS, DaemonHub),
// where it runs, this binary's build and when it started. The name keys the entry: the
// node for an agent (one a node), the pod for the others.
func Self(daemon, node, pod string, started time.Time) straitv1.DaemonStatus {
	key := pod
	if daemon == straitv1.DaemonAgent {
		key = node
	}
	b := cli.Version()
	return straitv1.DaemonStatus{
		Name: daemon + "/" + key, Daemon: daemon, Node: node, Pod: pod,
		Build: straitv1.Build{Version: b.Version, Revision: b.Revision},
		// The API server keeps seconds: truncated, a read-back entry equals this one.
		Since: metav1.NewTime(started.Truncate(time.Second)),
	}
}

// FieldManager is the entry's own server-side apply field manager (at most 128
// characters, as the API server requires).
func FieldManager(e straitv1.DaemonStatus) string {
	fm := "strait-" + e.Name
	if len(fm) <= 128 {
		return fm
	}
	sum := sha256.Sum256([]byte(e.Name))
	return "strait-" + e.Daemon + "-" + hex.EncodeToString(sum[:16])
}

// Published says whether m's status holds e as it is.
func Published(m *straitv1.Membership, e straitv1.DaemonStatus) bool {
	if m == nil {
		return false
	}
	for _, d := range m.Status.Daemons {
		if d.Name == e.Name {
			return d.Daemon == e.Daemon && d.Node == e.Node && d.Pod == e.Pod && d.Build == e.Build && d.Since.Equal(&e.Since)
		}
	}
	return false
}

// Publish puts e into the status of the Membership in namespace; a Membership that
// does not exist yet (the hub has not written it) is an error the caller retries on.
func Publish(ctx context.Context, c client.Client, namespace string, e straitv1.DaemonStatus) error {
	entry, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&e)
	if err != nil {
		return err
	}
	return apply(ctx, c, namespace, e, map[string]any{"daemons": []any{entry}})
}

// Withdraw takes e out of the Membership's status: an apply of this field manager that
// holds nothing gives up the entry it owned. No Membership: nothing to take out.
func Withdraw(ctx context.Context, c client.Client, namespace string, e straitv1.DaemonStatus) error {
	err := apply(ctx, c, namespace, e, map[string]any{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func apply(ctx context.Context, c client.Client, namespace string, e straitv1.DaemonStatus, status map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": straitv1.GroupVersion.String(),
		"kind":       "Membership",
		"metadata":   map[string]any{"name": straitv1.MembershipName, "namespace": namespace},
		"status":     status,
	}}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager(e)), client.ForceOwnership); err != nil {
		return fmt.Errorf("membership status, daemon %s: %w", e.Name, err)
	}
	return nil
}

// Keep publishes e at once and again every interval (an apply that changes nothing
// writes nothing), so that a Membership the hub made later, or made again, gets it;
// after a failure it tries again within retry. When ctx ends it withdraws e, within
// two seconds. For a daemon without a Membership informer of its own (strait dns); the
// agent checks its entry at every pass instead.
func Keep(ctx context.Context, c client.Client, namespace string, e straitv1.DaemonStatus, interval, retry time.Duration, onError func(error)) {
	for {
		wait := interval
		if err := Publish(ctx, c, namespace, e); err != nil && ctx.Err() == nil {
			wait = min(interval, retry)
			if onError != nil && !apierrors.IsNotFound(err) {
				onError(err)
			}
		}
		select {
		case <-ctx.Done():
			wctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err := Withdraw(wctx, c, namespace, e)
			cancel()
			if err != nil && onError != nil && !errors.Is(err, context.DeadlineExceeded) {
				onError(err)
			}
			return
		case <-time.After(wait):
		}
	}
}
