package server

import (
	"sync"

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
	}
	for _, c := range []prometheus.Collector{m.queries, m.latency, m.services, m.records, m.built, m.sourceErrors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) observe(qtype uint16, rcode int, seconds float64) {
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
	m.latency.Observe(seconds)
}

func (m *Metrics) snapshot(s *resolver.Snapshot) {
	m.services.Set(float64(s.Services()))
	m.records.Set(float64(s.Records()))
	m.built.SetToCurrentTime()
}

// SourceError counts a failed list or watch of resource.
func (m *Metrics) SourceError(resource string) { m.sourceErrors.WithLabelValues(resource).Inc() }
