package agent

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/straitnet/strait/nodeagent/kernel"
)

// fence gives the cable's port the elector's term in the kernel (kernel.Fencer): a data
// path that outlives this agent (a kernel VXLAN device, charon) stops carrying traffic
// when the term runs out, before any standby may take over. An error fails closed: the
// elector then does not hold the gateway (gateway.Elector.WithFence).
func (a *Agent) fence(ctx context.Context, f kernel.Fencer, until time.Time) error {
	a.mu.Lock()
	port := a.cablePort
	a.mu.Unlock()
	if port == 0 {
		return nil
	}
	if err := f.Fence(ctx, port, until); err != nil {
		a.metrics.fenceFailed()
		log.FromContext(ctx).Error(err, "fencing the cable to the gateway's term: this node does not hold the gateway until it can",
			"port", port, "until", until)
		return err
	}
	return nil
}

// unfence removes the fence from a node that runs no cable, once.
func (a *Agent) unfence(ctx context.Context) error {
	f, ok := a.cfg.Kernel.(kernel.Fencer)
	a.mu.Lock()
	done := a.unfenced || a.elector != nil
	a.mu.Unlock()
	if !ok || done {
		return nil
	}
	if err := f.Unfence(ctx); err != nil {
		return fmt.Errorf("removing the fence: %w", err)
	}
	a.mu.Lock()
	a.unfenced = a.elector == nil
	a.mu.Unlock()
	return nil
}
