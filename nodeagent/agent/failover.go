package agent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
)

// The failover SLO (docs/observability.md): the agent that takes the gateway over
// measures it, on its own clock, from the old holder's term running out (as this
// standby counted it) or its release (as the watch showed it) to its own cable up and
// a health check through it answered by every peer.

// failoverProbeEvery is how often a new active gateway sends a health check to each
// peer until one is answered (health.FirstReplier): the timing's precision.
const failoverProbeEvery = 50 * time.Millisecond

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

// timeFailover waits for this node's first pass as the active gateway (its cable
// made, the peers known), then health-checks every peer through the cable every
// failoverProbeEvery until each has answered once, and records the failover: from from
// to the last of the first answers.
func (a *Agent) timeFailover(ctx context.Context, from time.Time, previous string) {
	fr := a.cfg.FailoverProber
	if fr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, failoverGiveUp)
	defer cancel()
	var want Desired
	var peers []straitv1.Peer
	var driver cable.Driver
	for {
		if !a.stillActive() {
			return // lost again before it was done: no failover of this node's to time
		}
		a.mu.Lock()
		want, peers, driver = a.last, a.lastPeers, a.driver
		a.mu.Unlock()
		if want.Active && driver != nil && len(peers) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(failoverProbeEvery / 2):
		}
	}
	type answer struct {
		peer   string
		family corev1.IPFamily
		at     time.Time
		err    error
	}
	answers := make(chan answer, 2*len(peers))
	asked := 0
	for _, p := range peers {
		if p.Spec.Endpoint == nil {
			continue // a peer that has no gateway cannot answer: not this failover's
		}
		// Every family the two clusters share: the failover is done when each carries.
		for _, c := range healthCheckPairs(want.Local, p.Spec.Endpoint) {
			asked++
			go func() {
				at, err := fr.FirstReply(ctx, c.src, c.dst, failoverProbeEvery)
				answers <- answer{p.Spec.ClusterID, c.family, at, err}
			}()
		}
	}
	var last time.Time
	perFamily := map[corev1.IPFamily]time.Time{}
	for range asked {
		r := <-answers
		if r.err != nil {
			log.FromContext(ctx).V(1).Info("failover not timed: a peer did not answer through the cable", "peer", r.peer,
				"family", r.family, "error", r.err.Error())
			return
		}
		last = later(last, r.at)
		perFamily[r.family] = later(perFamily[r.family], r.at)
	}
	if asked == 0 || !a.stillActive() {
		return
	}
	took := last.Sub(from)
	a.metrics.failedOver(string(driver.Name()), previous, took)
	kv := []any{"from", previous, "took", took.String(), "driver", driver.Name()}
	for _, f := range []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol} {
		if at, ok := perFamily[f]; ok {
			kv = append(kv, metricFamily(f), at.Sub(from).String())
		}
	}
	log.FromContext(ctx).Info("failover done: every peer answers through this node's cable, in every family", kv...)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
