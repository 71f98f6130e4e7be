package daemonbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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

// Gone are the entries of m whose node is not among nodes: a daemon whose node left the
// cluster, or was killed with it, could not withdraw its own entry. An entry without a
// node is never gone by this rule. A node list that lacks self (a cache not yet filled)
// says nothing, and Gone returns none.
func Gone(m *straitv1.Membership, nodes []corev1.Node, self string) []straitv1.DaemonStatus {
	if m == nil {
		return nil
	}
	have := map[string]bool{}
	for _, n := range nodes {
		have[n.Name] = true
	}
	if !have[self] {
		return nil
	}
	var out []straitv1.DaemonStatus
	for _, d := range m.Status.Daemons {
		if d.Node != "" && !have[d.Node] {
			out = append(out, d)
		}
	}
	return out
}

// GonePods are the entries of m of that daemon kind whose pod is not among pods, the
// pods that serve now (a Service's EndpointSlices name them, ready or not): a daemon
// whose pod was deleted while its node stayed (a SIGKILL, a node's runtime killed, a
// withdrawal that timed out on a slow API server) could not take its own entry out.
// An entry younger than grace is kept, since a pod's first publish can come before the
// EndpointSlice controller lists it; and a list of pods that lacks self says nothing
// (a view not complete yet), as in Gone.
func GonePods(m *straitv1.Membership, daemon string, pods []string, self string, now time.Time, grace time.Duration) []straitv1.DaemonStatus {
	if m == nil || !slices.Contains(pods, self) {
		return nil
	}
	var out []straitv1.DaemonStatus
	for _, d := range m.Status.Daemons {
		if d.Daemon == daemon && d.Pod != "" && !slices.Contains(pods, d.Pod) && now.Sub(d.Since.Time) >= grace {
			out = append(out, d)
		}
	}
	return out
}

// Prune takes the gone entries out of the Membership's status with one JSON patch that
// tests, before each removal, that the entry still stands where m's copy has it: when
// another daemon's write moved the list in between, the API server refuses the whole
// patch and nothing is removed (the caller's next pass tries again on a fresh copy).
func Prune(ctx context.Context, c client.Client, m *straitv1.Membership, gone []straitv1.DaemonStatus) error {
	drop := map[string]bool{}
	for _, d := range gone {
		drop[d.Name] = true
	}
	var ops []map[string]any
	// From the end: each removal leaves the indices before it where they were.
	for i := len(m.Status.Daemons) - 1; i >= 0; i-- {
		d := m.Status.Daemons[i]
		if !drop[d.Name] {
			continue
		}
		path := fmt.Sprintf("/status/daemons/%d", i)
		ops = append(ops, map[string]any{"op": "test", "path": path + "/name", "value": d.Name},
			map[string]any{"op": "remove", "path": path})
	}
	if len(ops) == 0 {
		return nil
	}
	body, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	if err := c.Status().Patch(ctx, m.DeepCopy(), client.RawPatch(types.JSONPatchType, body)); err != nil {
		return fmt.Errorf("membership status, pruning the entries of gone daemons: %w", err)
	}
	return nil
}
