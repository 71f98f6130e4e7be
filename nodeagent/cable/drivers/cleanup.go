package drivers

import (
	"context"
	"errors"
	"fmt"
	"io"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Cleanup removes what every driver may have left on the node, whichever the ClusterSet
// names now: a node may have run another driver before. It never talks to the API
// server (o.Client is ignored: a cleanup must not create the wireguard key Secret, and
// a driver's Cleanup needs no key). A driver that cannot be built on this node is
// skipped, so that it does not stop the others' cleanup.
func Cleanup(ctx context.Context, o Options) error {
	o.Client = nil
	var errs []error
	for _, name := range []straitv1.CableDriver{straitv1.CableWireGuard, straitv1.CableIPsec, straitv1.CableVXLAN} {
		d, err := New(ctx, name, o)
		if err != nil {
			continue
		}
		if err := d.Cleanup(ctx); err != nil {
			errs = append(errs, fmt.Errorf("cable %s: %w", name, err))
		}
		if c, ok := d.(io.Closer); ok {
			_ = c.Close()
		}
	}
	return errors.Join(errs...)
}
