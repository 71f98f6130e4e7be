package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the hub's Prometheus metrics.
type Metrics struct {
	reconcileDuration *prometheus.HistogramVec
	members           *prometheus.GaugeVec
	membersConnected  *prometheus.GaugeVec
	exports           *prometheus.GaugeVec
	errors            *prometheus.CounterVec
	applied           *prometheus.CounterVec
	pruned            *prometheus.CounterVec
	memberPasses      *prometheus.CounterVec
}

// NewMetrics registers the hub's metrics with reg (controller-runtime's
// metrics.Registry in the binary, a fresh registry in tests).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		reconcileDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strait_hub_reconcile_duration_seconds",
			Help:    "Time of one ClusterSet reconcile, from reading it to writing its status.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"clusterset"}),
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strait_hub_members",
			Help: "Member clusters of the ClusterSet.",
		}, []string{"clusterset"}),
		membersConnected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strait_hub_members_connected",
			Help: "Member clusters whose API server the hub reaches.",
		}, []string{"clusterset"}),
		exports: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strait_hub_exports",
			Help: "Exported services of the ClusterSet.",
		}, []string{"clusterset"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strait_hub_errors_total",
			Help: "Reconcile errors by kind: validation, unreachable, apply, prune, connect.",
		}, []string{"clusterset", "kind"}),
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strait_hub_objects_applied_total",
			Help: "Objects server-side applied into members.",
		}, []string{"clusterset", "member"}),
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strait_hub_objects_pruned_total",
			Help: "Objects deleted from members because they are no longer desired.",
		}, []string{"clusterset", "member"}),
		memberPasses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strait_hub_member_applies_total",
			Help: "Passes over a member: every object applied (those in place skipped) and leftovers pruned. A member whose inputs did not change is not passed over, except at the resync.",
		}, []string{"clusterset", "member"}),
	}
	for _, c := range []prometheus.Collector{m.reconcileDuration, m.members, m.membersConnected, m.exports, m.errors, m.applied, m.pruned, m.memberPasses} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) forget(cs string) {
	m.reconcileDuration.DeleteLabelValues(cs)
	m.members.DeleteLabelValues(cs)
	m.membersConnected.DeleteLabelValues(cs)
	m.exports.DeleteLabelValues(cs)
	m.errors.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
	m.applied.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
	m.pruned.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
	m.memberPasses.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
}
