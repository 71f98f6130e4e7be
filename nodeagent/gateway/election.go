package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaseName is the one Lease per cluster (in strait-system) whose holder is the active
// gateway.
const LeaseName = "strait-gateway"

// Timing of the election. A crashed gateway is replaced after LeaseDuration plus up to
// RetryPeriod; a released lease is taken within RetryPeriod.
type Timing struct {
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// FastTiming is tuned for the failover targets (< 5 s after a crash, < 1 s on a
// graceful handover), at the price of one Lease update per node every 500 ms.
func FastTiming() Timing {
	return Timing{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}
}

// Elector campaigns for the Lease as one gateway-capable node.
type Elector struct {
	kube      kubernetes.Interface
	namespace string
	identity  string
	timing    Timing
	onChange  func(active bool)
	active    atomic.Bool
}

// NewElector is an Elector for node identity; onChange is called (from the election
// goroutine) whenever this node becomes active or stops being active.
func NewElector(kube kubernetes.Interface, namespace, identity string, timing Timing, onChange func(active bool)) *Elector {
	return &Elector{kube: kube, namespace: namespace, identity: identity, timing: timing, onChange: onChange}
}

// Active says whether this node holds the Lease right now.
func (e *Elector) Active() bool { return e.active.Load() }

// Run campaigns until ctx ends, then releases the Lease if it holds it. Losing the Lease
// (say, the API server was unreachable past RenewDeadline) makes it a candidate again.
func (e *Elector) Run(ctx context.Context) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.namespace, Name: LeaseName},
		Client:     e.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   e.timing.LeaseDuration,
			RenewDeadline:   e.timing.RenewDeadline,
			RetryPeriod:     e.timing.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { e.set(true) },
				OnStoppedLeading: func() { e.set(false) },
			},
		})
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		le.Run(ctx)
	}
	return nil
}

func (e *Elector) set(active bool) {
	if e.active.Swap(active) != active && e.onChange != nil {
		e.onChange(active)
	}
}
