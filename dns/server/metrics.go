package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/straitnet/strait/dns/resolver"
)

// Metrics of the DNS server, registered on the Registerer given to NewMetrics.
type Metrics struct {
	queries      *prometheus.CounterVec
	latency      prometheus.Histogram
	services     prometheus.Gauge
	records      prometheus.Gauge
	built        prometheus.Gauge
	sourceErrors *prometheus.CounterVec
	// The SLOs (docs/observability.md): the age of the snapshot each answer came from,
	// and how long a change took from its watch event to being served.
	answerAge   prometheus.Histogram
	propagation prometheus.Histogram
	// published is when the snapshot being served was published, in Unix nanoseconds.
	published atomic.Int64

	// counters caches the label lookups of the hot path, keyed by qtype<<16|rcode.
	counters sync.Map
}

// NewMetrics creates the metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "strait", Subsystem: "dns", Name: "queries_total",
			Help: "DNS questions answered, by question type and response code.",
		}, []string{"type", "rcode"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "strait", Subsystem: "dns", Name: "request_duration_seconds",
			Help:    "Time from receiving a question to handing the answer to the socket.",
			Buckets: prometheus.ExponentialBuckets(5e-6, 2, 14),
		}),
		services: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "strait", Subsystem: "dns", Name: "snapshot_services",
			Help: "Imported services in the snapshot being served.",
		}),
		records: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "strait", Subsystem: "dns", Name: "snapshot_records",
			Help: "Addresses the snapshot being served answers with.",
		}),
		built: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "strait", Subsystem: "dns", Name: "snapshot_timestamp_seconds",
			Help: "When the snapshot being served was built (Unix time): after every change of the imports, their endpoints, the Peers or the Membership.",
		}),
		sourceErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "strait", Subsystem: "dns", Name: "source_errors_total",
			Help: "Failed lists and watches of the resources the snapshot is built from; while they fail, answers come from the last snapshot.",
		}, []string{"resource"}),
		answerAge: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "strait", Subsystem: "dns", Name: "answer_snapshot_age_seconds",
			Help:    "Per answer, the time since the snapshot it came from was published: since the last change of the imports, their endpoints, the Peers or the Membership was taken in.",
			Buckets: []float64{1, 10, 60, 300, 900, 3600, 6 * 3600, 24 * 3600},
		}),
		propagation: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "strait", Subsystem: "dns", Name: "propagation_seconds",
			Help:    "From the watch event of the first change a snapshot takes in (an import, its EndpointSlices, a Peer, the Membership) to that snapshot being served (this member's clock).",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}),
	}
	for _, c := range []prometheus.Collector{m.queries, m.latency, m.services, m.records, m.built, m.sourceErrors, m.answerAge, m.propagation} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe counts one answer to a question of qtype, begun at start and ready at end.
func (m *Metrics) observe(qtype uint16, rcode int, start, end time.Time) {
	key := uint32(qtype)<<16 | uint32(rcode)&0xffff
	c, ok := m.counters.Load(key)
	if !ok {
		t, known := dns.TypeToString[qtype]
		if !known {
			t = "other"
		}
		c, _ = m.counters.LoadOrStore(key, m.queries.WithLabelValues(t, dns.RcodeToString[rcode]))
	}
	c.(prometheus.Counter).Inc()
	m.latency.Observe(end.Sub(start).Seconds())
	if p := m.published.Load(); p > 0 {
		m.answerAge.Observe(float64(end.UnixNano()-p) / 1e9)
	}
}

func (m *Metrics) snapshot(s *resolver.Snapshot) {
	m.services.Set(float64(s.Services()))
	m.records.Set(float64(s.Records()))
	now := time.Now()
	m.built.Set(float64(now.UnixNano()) / 1e9)
	m.published.Store(now.UnixNano())
}

// Propagated counts a change that took d from its watch event to being served.
func (m *Metrics) Propagated(d time.Duration) { m.propagation.Observe(d.Seconds()) }

// SourceError counts a failed list or watch of resource.
func (m *Metrics) SourceError(resource string) { m.sourceErrors.WithLabelValues(resource).Inc() }
