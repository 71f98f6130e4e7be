package agent

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/health"
)

// familyCheck is one address family's health-check round to a peer's gateway.
type familyCheck struct {
	family   corev1.IPFamily
	src, dst netip.Addr
	r        health.Result
	err      error
}

// familyChecks are a peer's rounds, IPv4 first: one per family both gateways have a
// health-check address of, which is every family the two clusters share.
type familyChecks []familyCheck

// healthCheckPairs are the (source, destination) pairs of each family both ends have.
func healthCheckPairs(local cable.Local, ep *straitv1.PeerEndpoint) []familyCheck {
	var out []familyCheck
	for _, f := range []struct {
		family corev1.IPFamily
		src    netip.Addr
		dst    string
	}{
		{corev1.IPv4Protocol, local.HealthCheckIP, ep.HealthCheckIP},
		{corev1.IPv6Protocol, local.HealthCheckIPv6, ep.HealthCheckIPv6},
	} {
		dst, err := parseAddr(f.dst)
		if err != nil || !f.src.IsValid() || dst.Is4() != f.src.Is4() {
			continue
		}
		out = append(out, familyCheck{family: f.family, src: f.src, dst: dst})
	}
	return out
}

// probeFamilies runs a round in each family at once, so that a dual-stack peer's health
// takes one round's time.
func (a *Agent) probeFamilies(ctx context.Context, local cable.Local, ep *straitv1.PeerEndpoint) familyChecks {
	checks := familyChecks(healthCheckPairs(local, ep))
	done := make(chan struct{}, len(checks))
	for i := range checks {
		go func(c *familyCheck) {
			c.r, c.err = a.cfg.Prober.Probe(ctx, c.src, c.dst)
			done <- struct{}{}
		}(&checks[i])
	}
	for range checks {
		<-done
	}
	return checks
}

// reachable says whether the peer answers in every family, with the message of the
// Connected condition: each family's count. A family whose probe could not run (its
// source address not on this node yet) goes by what the cable reports, cable.
func (c familyChecks) reachable(cable bool) (bool, string) {
	ok := true
	parts := make([]string, 0, len(c))
	for _, f := range c {
		if f.err != nil {
			ok = ok && cable
			parts = append(parts, fmt.Sprintf("%s: %v", f.family, f.err))
			continue
		}
		ok = ok && f.r.Received > 0
		parts = append(parts, fmt.Sprintf("%s: %d of %d health checks to %s answered", f.family, f.r.Received, f.r.Sent, f.dst))
	}
	return ok, strings.Join(parts, "; ")
}

// status is the Peer's HealthChecks: the families whose round ran.
func (c familyChecks) status() []straitv1.PeerHealthCheck {
	out := make([]straitv1.PeerHealthCheck, 0, len(c))
	for _, f := range c {
		if f.err != nil {
			continue
		}
		out = append(out, straitv1.PeerHealthCheck{Family: f.family, Address: f.dst.String(), Sent: int32(f.r.Sent),
			Received: int32(f.r.Received), LatencyMicros: f.r.RTT.Microseconds(), LossPercent: f.r.LossPercent()})
	}
	return out
}

// metricFamily is the family label of a per-family series (docs/observability.md).
func metricFamily(f corev1.IPFamily) string {
	if f == corev1.IPv6Protocol {
		return "ipv6"
	}
	return "ipv4"
}
