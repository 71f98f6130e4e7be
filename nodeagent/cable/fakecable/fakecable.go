package fakecable

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
)

// Driver is an in-memory cable driver.
type Driver struct {
	name      straitv1.CableDriver
	publicKey string

	mu       sync.Mutex
	local    *cable.Local
	remotes  []cable.Remote
	down     map[string]bool
	converge error
}

var _ cable.Driver = (*Driver)(nil)

// New returns a fake driver that calls itself name and publishes publicKey.
func New(name straitv1.CableDriver, publicKey string) *Driver {
	return &Driver{name: name, publicKey: publicKey, down: map[string]bool{}}
}

// Name implements cable.Driver.
func (d *Driver) Name() straitv1.CableDriver { return d.name }

// PublicKey implements cable.Driver.
func (d *Driver) PublicKey() string { return d.publicKey }

// FailConverge makes every following Converge fail with err (nil to stop), after it has
// still applied what it could, as a real driver does.
func (d *Driver) FailConverge(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.converge = err
}

// SetDown marks the connection to cluster as not connected (true) or connected (false).
func (d *Driver) SetDown(cluster string, down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down[cluster] = down
}

// Converge implements cable.Driver.
func (d *Driver) Converge(_ context.Context, local cable.Local, remotes []cable.Remote) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := local
	d.local = &l
	d.remotes = slices.Clone(remotes)
	slices.SortFunc(d.remotes, func(a, b cable.Remote) int { return cmp.Compare(a.ClusterID, b.ClusterID) })
	var errs []error
	for i, r := range d.remotes {
		if i > 0 && d.remotes[i-1].ClusterID == r.ClusterID {
			errs = append(errs, fmt.Errorf("remote %s listed twice", r.ClusterID))
		}
	}
	return errors.Join(append(errs, d.converge)...)
}

// Connections implements cable.Driver: every remote of the last Converge, connected
// unless SetDown says otherwise.
func (d *Driver) Connections(context.Context) ([]cable.Connection, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]cable.Connection, 0, len(d.remotes))
	for _, r := range d.remotes {
		c := cable.Connection{ClusterID: r.ClusterID, Connected: !d.down[r.ClusterID]}
		if c.Connected {
			c.LastHandshake = time.Unix(0, 0).UTC()
		}
		out = append(out, c)
	}
	return out, nil
}

// Cleanup implements cable.Driver.
func (d *Driver) Cleanup(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.local = nil
	d.remotes = nil
	return nil
}

// Dump is the driver's state as stable text: "cable <driver> none" when nothing is set
// up, else the local end and one line per remote.
func (d *Driver) Dump() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.local == nil {
		return fmt.Sprintf("cable %s none\n", d.name)
	}
	var b strings.Builder
	l := d.local
	fmt.Fprintf(&b, "cable %s local %s %s:%d cidrs %v health %s\n", d.name, l.ClusterID, l.IP, l.Port, l.CIDRs, l.HealthCheckIP)
	for _, r := range d.remotes {
		fmt.Fprintf(&b, "cable %s remote %s %s:%d key %q cidrs %v\n", d.name, r.ClusterID, r.IP, r.Port, r.PublicKey, r.CIDRs)
	}
	return b.String()
}
