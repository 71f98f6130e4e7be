package agent

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/straitnet/strait/internal/exemplar"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/gateway"
)

// metrics are the agent's Prometheus metrics: what Submariner's gateway exports (its
// connections' state, latency and bytes) plus the agent's own convergence.
type metrics struct {
	active    prometheus.Gauge
	takeovers prometheus.Counter
	// wasActive is the last setActive's; only the agent's sync loop calls it.
	wasActive bool
	// failover: the failover SLO, on the agent that took the gateway over (failover.go).
	failover *prometheus.HistogramVec
	holding  prometheus.GaugeFunc
	// renewals and stepDowns: the gateway Lease's renewals by this node and its
	// step-downs by reason (gateway.Report), where an API server too slow for the Lease
	// timing shows before it costs a failover.
	renewals      *prometheus.HistogramVec
	stepDowns     *prometheus.CounterVec
	syncDuration  prometheus.Histogram
	syncErrors    prometheus.Counter
	fenceErrors   prometheus.Counter
	lastSyncOK    prometheus.Gauge
	peerConnected *prometheus.GaugeVec
	peerLatency   *prometheus.GaugeVec
	peerLoss      *prometheus.GaugeVec
	cableBytes    *cableBytes
}

// cableBytes reports the cable driver's byte counts of the last health round as
// counters: the driver counts (a WireGuard peer's, an IPsec SA's, a VXLAN device's), and
// a count that goes back to zero (a cable made again) is a counter reset to Prometheus.
type cableBytes struct {
	rx, tx *prometheus.Desc
	mu     sync.Mutex
	round  []peerHealth
}

func (c *cableBytes) Describe(ch chan<- *prometheus.Desc) { ch <- c.rx; ch <- c.tx }

func (c *cableBytes) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.round {
		if p.conn != nil {
			ch <- prometheus.MustNewConstMetric(c.rx, prometheus.CounterValue, float64(p.conn.RxBytes), p.peer)
			ch <- prometheus.MustNewConstMetric(c.tx, prometheus.CounterValue, float64(p.conn.TxBytes), p.peer)
		}
	}
}

func (c *cableBytes) set(round []peerHealth) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.round = round
}

// newMetrics registers the agent's metrics with reg (controller-runtime's
// metrics.Registry in the binary); a nil reg keeps them unregistered (tests run several
// agents in one process). holding is read at every scrape.
//
// The remote cluster of a per-peer series is its "peer" label: "cluster" is the
// scrape's, the member whose Prometheus reads this agent (docs/observability.md).
func newMetrics(reg prometheus.Registerer, holding func() bool) (*metrics, error) {
	perPeer := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: "On the active gateway: " + help},
			append([]string{"peer"}, labels...))
	}
	m := &metrics{
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strait_agent_gateway_active",
			Help: "1 while this node is the cluster's active gateway.",
		}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strait_agent_gateway_takeovers_total",
			Help: "Times this node became the cluster's active gateway; summed over a cluster's agents, its failovers and handovers.",
		}),
		holding: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "strait_agent_gateway_holding",
			Help: "1 while this node stays the active gateway without renewing its Lease, because the API server answers no gateway.",
		}, func() float64 { return boolValue(holding()) }),
		renewals: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strait_agent_gateway_lease_renewal_seconds",
			Help:    "On the active gateway: round trip of each gateway Lease renewal, by result (ok, failed); one slower than the renew deadline (--renew-deadline, 700 ms by default) makes the gateway step down.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.7, 1, 1.5, 2.5, 5},
		}, []string{"result"}),
		stepDowns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strait_agent_gateway_step_downs_total",
			Help: "Times this node stopped being the active gateway while it meant to hold it, by reason: renew-deadline (no renewal in time: an API server too slow for the Lease timing), other-holder, refused, not-confirmed, fence.",
		}, []string{"reason"}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strait_agent_sync_duration_seconds",
			Help:    "Time of one pass: reading the cluster's objects and the kernel, converging both, publishing the Gateway.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5},
		}),
		syncErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strait_agent_sync_errors_total",
			Help: "Passes that ended in an error (retried with backoff).",
		}),
		fenceErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strait_agent_fence_errors_total",
			Help: "Failed writes of the gateway's term to the kernel's fence (tables ip and ip6 strait-fence); while they fail, this node does not hold the gateway Lease, and the cable's traffic stops when the last written term ends.",
		}),
		lastSyncOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strait_agent_last_sync_ok",
			Help: "1 when the last pass converged without error; a node stuck at 0 is not converging.",
		}),
		peerConnected: perPeer("strait_agent_peer_connected",
			"1 while the remote cluster answers health checks through the cable, in every address family the two share."),
		peerLatency: perPeer("strait_agent_peer_latency_seconds",
			"round-trip time of the last health checks to the remote gateway, through the cable, per address family.", "family"),
		peerLoss: perPeer("strait_agent_peer_loss_ratio",
			"share of the last round's health checks that went unanswered, per address family.", "family"),
		failover: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strait_agent_failover_seconds",
			Help:    "On the agent that took the gateway over: from the old holder's term running out (or its release) to this node's cable carrying a health check answered by every peer (this node's clock).",
			Buckets: []float64{0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30, 60},
		}, []string{"driver"}),
		cableBytes: &cableBytes{
			rx: prometheus.NewDesc("strait_agent_cable_rx_bytes_total",
				"On the active gateway: bytes received from the remote cluster, as the cable driver counts them (from zero when the cable is made again).", []string{"peer"}, nil),
			tx: prometheus.NewDesc("strait_agent_cable_tx_bytes_total",
				"On the active gateway: bytes sent to the remote cluster, as the cable driver counts them (from zero when the cable is made again).", []string{"peer"}, nil),
		},
	}
	if reg == nil {
		return m, nil
	}
	for _, r := range []string{"ok", "failed"} {
		m.renewals.WithLabelValues(r)
	}
	for _, r := range gateway.StepDownReasons {
		m.stepDowns.WithLabelValues(r) // at zero: the first step-down is an increase
	}
	for _, c := range []prometheus.Collector{m.active, m.takeovers, m.holding, m.renewals, m.stepDowns, m.failover, m.syncDuration, m.syncErrors, m.fenceErrors, m.lastSyncOK, m.peerConnected,
		m.peerLatency, m.peerLoss, m.cableBytes} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// peerHealth is one health round's result for one remote cluster.
type peerHealth struct {
	peer      string
	connected bool
	// families are the round's health checks, one per family the two clusters share.
	families familyChecks
	conn     *cable.Connection
}

// synced records one pass.
func (m *metrics) synced(took time.Duration, err error) {
	m.syncDuration.Observe(took.Seconds())
	m.lastSyncOK.Set(boolValue(err == nil))
	if err != nil {
		m.syncErrors.Inc()
	}
}

func (m *metrics) fenceFailed() { m.fenceErrors.Inc() }

// electionReport is what the gateway elector reports into the metrics.
func (m *metrics) electionReport() gateway.Report {
	return gateway.Report{
		Renewal: func(took time.Duration, ok bool) {
			result := "ok"
			if !ok {
				result = "failed"
			}
			m.renewals.WithLabelValues(result).Observe(took.Seconds())
		},
		StepDown: func(reason string) { m.stepDowns.WithLabelValues(reason).Inc() },
	}
}

// setActive records whether this node is the active gateway, counting each time it
// becomes it, and says whether it just did.
func (m *metrics) setActive(active bool) (became bool) {
	became = active && !m.wasActive
	if became {
		m.takeovers.Inc()
	}
	m.wasActive = active
	m.active.Set(boolValue(active))
	return became
}

// cableDriver makes the failover series of a gateway's driver, at zero: the first
// failover is then an increase Prometheus sees (a series that starts at one is not).
func (m *metrics) cableDriver(driver string) { m.failover.WithLabelValues(driver) }

// failedOver records a failover to this node from the gateway previous, done in took;
// the observation's exemplar names previous.
func (m *metrics) failedOver(driver, previous string, took time.Duration) {
	exemplar.Observe(m.failover.WithLabelValues(driver), took.Seconds(), "from", previous)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// setPeers replaces the per-peer series with this round's (none when this node is not
// the active gateway), so a removed peer's series goes too.
func (m *metrics) setPeers(round []peerHealth) {
	for _, v := range []*prometheus.GaugeVec{m.peerConnected, m.peerLatency, m.peerLoss} {
		v.Reset()
	}
	for _, p := range round {
		m.peerConnected.WithLabelValues(p.peer).Set(boolValue(p.connected))
		for _, f := range p.families {
			if f.err == nil {
				m.peerLatency.WithLabelValues(p.peer, metricFamily(f.family)).Set(f.r.RTT.Seconds())
				m.peerLoss.WithLabelValues(p.peer, metricFamily(f.family)).Set(f.r.LossRatio())
			}
		}
	}
	m.cableBytes.set(round)
}
