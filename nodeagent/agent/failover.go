package agent

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The failover SLO (docs/observability.md): the agent that takes the gateway over
// measures it, on its own clock, from the old holder's term running out (as this
// standby counted it) or its release (as the watch showed it) to its own cable up and
// a health check through it answered by every peer.

// failoverProbeEvery is how often a new active gateway health-checks the peers that
// have not answered yet; each check is one echo request (FailoverProber).
const failoverProbeEvery = 100 * time.Millisecond

// failoverGiveUp ends a timing no peer completes: a peer down is not a failover's time.
const failoverGiveUp = 2 * time.Minute

// becameActive starts timing the failover when this node has just become the active
// gateway by taking the Lease over from another node.
func (a *Agent) becameActive() {
	a.mu.Lock()
	el, ctx := a.elector, a.running
	a.mu.Unlock()
	if el == nil || ctx == nil {
		return
	}
	from, previous := el.Takeover()
	if from.IsZero() {
		return
	}
	go a.timeFailover(log.IntoContext(ctx, a.mgr.GetLogger().WithName("failover")), from, previous)
}

// timeFailover health-checks every peer through the new cable until each has answered
// once, then records the failover: from from to the last of the first answers.
func (a *Agent) timeFailover(ctx context.Context, from time.Time, previous string) {
	prober := a.cfg.FailoverProber
	if prober == nil {
		prober = a.cfg.Prober
	}
	if prober == nil {
		return
	}
	answered := map[string]time.Time{}
	for deadline := time.Now().Add(failoverGiveUp); time.Now().Before(deadline); {
		if !a.stillActive() {
			return // lost again before it was done: no failover of this node's to time
		}
		a.mu.Lock()
		want, peers, driver := a.last, a.lastPeers, a.driver
		a.mu.Unlock()
		if want.Active && driver != nil && len(peers) > 0 {
			done := true
			var last time.Time
			for _, p := range peers {
				id := p.Spec.ClusterID
				if at, ok := answered[id]; ok {
					last = later(last, at)
					continue
				}
				done = false
				if p.Spec.Endpoint == nil {
					continue
				}
				hc, err := parseAddr(p.Spec.Endpoint.HealthCheckIP)
				if err != nil {
					continue
				}
				sent := time.Now()
				if r, err := prober.Probe(ctx, want.Local.HealthCheckIP, hc); err == nil && r.Received > 0 {
					answered[id] = sent.Add(r.RTT)
				}
			}
			if done {
				took := last.Sub(from)
				a.metrics.failedOver(string(driver.Name()), took)
				log.FromContext(ctx).Info("failover done: every peer answers through this node's cable",
					"from", previous, "took", took.String(), "driver", driver.Name())
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(failoverProbeEvery):
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
