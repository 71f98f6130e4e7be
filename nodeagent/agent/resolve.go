package agent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// LookupFunc resolves a hostname to its addresses (net.Resolver.LookupNetIP's shape).
type LookupFunc func(ctx context.Context, network, host string) ([]netip.Addr, error)

// endpointResolver resolves the hostnames of Peers whose remote is reached by a DNS name,
// each again once its refresh interval has passed: the dialing side follows a changed
// record on its own, without the hub. An address that fails to resolve again is kept,
// so a resolver outage does not cut a working cable.
type endpointResolver struct {
	lookup LookupFunc
	now    func() time.Time

	mu   sync.Mutex
	last map[string]resolvedHost
}

type resolvedHost struct {
	addr netip.Addr
	at   time.Time
}

// lookupTimeout bounds one resolution, so a dead resolver cannot stall a pass.
const lookupTimeout = 2 * time.Second

func newEndpointResolver(lookup LookupFunc, now func() time.Time) *endpointResolver {
	if lookup == nil {
		lookup = net.DefaultResolver.LookupNetIP
	}
	if now == nil {
		now = time.Now
	}
	return &endpointResolver{lookup: lookup, now: now, last: map[string]resolvedHost{}}
}

// resolve returns the addresses of every peer hostname, resolving those due, and how
// soon the next one is due (0 for none).
func (r *endpointResolver) resolve(ctx context.Context, peers []straitv1.Peer) (map[string]netip.Addr, time.Duration, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]netip.Addr{}
	var next time.Duration
	var errs []error
	wanted := map[string]bool{}
	for _, p := range peers {
		ep := p.Spec.Endpoint
		if ep == nil || ep.Hostname == "" {
			continue
		}
		wanted[ep.Hostname] = true
		every := straitv1.DefaultEndpointRefresh
		if ep.RefreshInterval != nil && ep.RefreshInterval.Duration > 0 {
			every = ep.RefreshInterval.Duration
		}
		now := r.now()
		h, known := r.last[ep.Hostname]
		if !known || now.Sub(h.at) >= every {
			addr, err := r.lookupOne(ctx, ep.Hostname)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("peer %s: %w", p.Name, err))
				if known {
					// Keep the last address, and try again at the next interval.
					h.at = now
				}
			default:
				h = resolvedHost{addr: addr, at: now}
			}
			if h.addr.IsValid() {
				r.last[ep.Hostname] = h
			}
		}
		if h.addr.IsValid() {
			out[ep.Hostname] = h.addr
		}
		if d := every - now.Sub(h.at); next == 0 || d < next {
			next = max(d, time.Second)
		}
	}
	for host := range r.last {
		if !wanted[host] {
			delete(r.last, host)
		}
	}
	return out, next, errs
}

func (r *endpointResolver) lookupOne(ctx context.Context, host string) (netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	addrs, err := r.lookup(ctx, "ip4", host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("resolving endpoint hostname %s: %w", host, err)
	}
	for _, a := range addrs {
		if a.Unmap().Is4() {
			return a.Unmap(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("endpoint hostname %s has no IPv4 address", host)
}
