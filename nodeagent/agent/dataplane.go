package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
)

// Dataplane converges one node's kernel and cable to a Snapshot. It holds no
// Kubernetes client, so tests drive it directly with Snapshots on a real or fake kernel.
type Dataplane struct {
	kernel kernel.Kernel
	own    kernel.Ownership

	mu sync.Mutex
	// cableClean: the driver has been cleaned up since this node last ran the cable
	// (false at start, so leftovers of an earlier process are removed on a passive node).
	cableClean bool
}

// NewDataplane converges k.
func NewDataplane(k kernel.Kernel) *Dataplane {
	return &Dataplane{kernel: k, own: route.Ownership()}
}

// Converge computes the desired data plane from s and makes the kernel and the cable
// match it: the cable first (routes need its device), then the kernel (adds before
// deletes), then, on a node that is no longer the active gateway, the cable's cleanup.
// A cable that failed before the kernel was converged is tried once more after it: the
// kernel state holds what a cable may need, such as the health-check address the ipsec
// driver sends from, which a gateway that just became active does not have yet.
func (d *Dataplane) Converge(ctx context.Context, s Snapshot) (Desired, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	want, err := Compute(s)
	if !want.Placed {
		return want, fmt.Errorf("nothing applied: %w", err)
	}
	errs := []error{err}
	var cableErr error
	if want.Active {
		d.cableClean = false
		cableErr = s.Driver.Converge(ctx, want.Local, want.Remotes)
	}
	kernelErr := kernel.Apply(ctx, d.kernel, d.own, want.State)
	if kernelErr != nil {
		errs = append(errs, fmt.Errorf("kernel: %w", kernelErr))
	} else if cableErr != nil {
		cableErr = s.Driver.Converge(ctx, want.Local, want.Remotes)
	}
	if cableErr != nil {
		errs = append(errs, fmt.Errorf("cable %s: %w", s.Driver.Name(), cableErr))
	}
	if !want.Active && s.Driver != nil && !d.cableClean {
		if err := s.Driver.Cleanup(ctx); err != nil {
			errs = append(errs, fmt.Errorf("cable %s cleanup: %w", s.Driver.Name(), err))
		} else {
			d.cableClean = true
		}
	}
	return want, errors.Join(errs...)
}

// Cleanup removes everything of ours from the kernel and, with a driver, the cable.
func (d *Dataplane) Cleanup(ctx context.Context, driver cable.Driver) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	if err := kernel.Cleanup(ctx, d.kernel, d.own); err != nil {
		errs = append(errs, fmt.Errorf("kernel: %w", err))
	}
	if f, ok := d.kernel.(kernel.Fencer); ok {
		if err := f.Unfence(ctx); err != nil {
			errs = append(errs, fmt.Errorf("fence: %w", err))
		}
	}
	// Routes a cable driver left, also when the driver itself cannot be built here.
	if err := kernel.Cleanup(ctx, d.kernel, kernel.Ownership{Protocol: route.CableProtocol}); err != nil {
		errs = append(errs, fmt.Errorf("cable routes: %w", err))
	}
	if driver != nil {
		if err := driver.Cleanup(ctx); err != nil {
			errs = append(errs, fmt.Errorf("cable %s: %w", driver.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// Links reads the node's links for a Snapshot.
func (d *Dataplane) Links(ctx context.Context) ([]kernel.Link, error) { return d.kernel.Links(ctx) }
