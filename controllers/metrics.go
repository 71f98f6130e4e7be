package controllers

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the hub's Prometheus metrics.
type Metrics struct {
	reconcileDuration *prometheus.HistogramVec
	// reconcilePhases splits a reconcile into its phases (phaseClock).
	reconcilePhases  *prometheus.HistogramVec
	members          *prometheus.GaugeVec
	membersConnected *prometheus.GaugeVec
	exports          *prometheus.GaugeVec
	errors           *prometheus.CounterVec
	applied          *prometheus.CounterVec
	pruned           *prometheus.CounterVec
	memberPasses     *prometheus.CounterVec
	factsReads       *prometheus.CounterVec
	// reporting is 1 while a member reports its print of the kinds the hub does not
	// watch (strait dns); reportDrift counts the full passes such a report asked for.
	reporting   *prometheus.GaugeVec
	reportDrift *prometheus.CounterVec
	// resolutions counts the exports each plan resolved again and those it took over
	// from the last plan (plan.Planner), by outcome.
	resolutions *prometheus.CounterVec

	// What the alerts read (kustomize/components/monitoring/rules/hub.rules.yaml).
	generation       *prometheus.GaugeVec
	stalled          *prometheus.GaugeVec
	conflicts        *prometheus.GaugeVec
	invalid          *prometheus.GaugeVec
	memberConnected  *prometheus.GaugeVec
	memberGeneration *prometheus.GaugeVec
	memberAppliedAt  *prometheus.GaugeVec

	// The SLOs (propagation.go).
	clusterSetPropagation *prometheus.HistogramVec
	exportPropagation     *prometheus.HistogramVec

	// mu guards held: per ClusterSet, per member, the generation the member last held
	// whole, since this process started; and propagating.
	mu          sync.Mutex
	held        map[string]map[string]heldState
	propagating map[string]*propagating
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
		reconcilePhases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strait_hub_reconcile_phase_seconds",
			Help:    "Time of one phase of a ClusterSet reconcile: prepare, connect, observe, plan, write, status, records, status-patch.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"clusterset", "phase"}),
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
		factsReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strait_hub_member_facts_reads_total",
			Help: "Reads of what the plan depends on in a member (its gateways, peers, allocations, exported services and their slices) from the hub's informers: only after the informers reported a change of those, a new connection or a new spec for the member.",
		}, []string{"clusterset", "member"}),
		reporting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strait_hub_member_reporting",
			Help: "1 while the member reports, in its Membership's status.prints (strait dns), what it holds of the hub's ServiceImports and derived Services and EndpointSlices, which the hub does not watch; 0 when it does not, and someone's change to those is then repaired at the resync only.",
		}, []string{"clusterset", "member"}),
		reportDrift: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strait_hub_member_report_drift_total",
			Help: "Full passes over a member because its report differed from the hub's record of its writes after the hub's own writes had had time to show (someone changed, deleted or labelled a ServiceImport or derived object there).",
		}, []string{"clusterset", "member"}),
		generation: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strait_hub_clusterset_generation",
			Help: "The ClusterSet's metadata.generation the hub last reconciled.",
		}, []string{"clusterset"}),
		stalled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strait_hub_clusterset_stalled",
			Help: "1 while the ClusterSet is Stalled: its spec cannot work, and every member keeps its last good state.",
		}, []string{"clusterset"}),
		conflicts: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strait_hub_export_conflicts",
			Help: "Exports whose clusters disagree on the service (a Conflict condition on the export).",
		}, []string{"clusterset"}),
		invalid: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strait_hub_exports_invalid",
			Help: "Exports that a cluster they name cannot serve (no such Service, or a type the MCS API does not export).",
		}, []string{"clusterset"}),
		memberConnected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strait_hub_member_connected",
			Help: "1 while the hub reaches the member's API server.",
		}, []string{"clusterset", "member"}),
		memberGeneration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strait_hub_member_applied_generation",
			Help: "The last ClusterSet generation whose objects the member held all of (0: none since the hub started).",
		}, []string{"clusterset", "member"}),
		memberAppliedAt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strait_hub_member_last_applied_timestamp_seconds",
			Help: "When the hub last found the member holding every object of the current generation (Unix time; 0: not since the hub started).",
		}, []string{"clusterset", "member"}),
		resolutions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strait_hub_export_resolutions_total",
			Help: "Exports the hub's plans resolved (outcome resolved: an input changed) or took over from the last plan (outcome reused: none did).",
		}, []string{"clusterset", "outcome"}),
		held:        map[string]map[string]heldState{},
		propagating: map[string]*propagating{},
	}
	m.clusterSetPropagation, m.exportPropagation = newPropagationHistograms()
	for _, c := range []prometheus.Collector{m.reconcileDuration, m.reconcilePhases, m.members, m.membersConnected, m.exports, m.errors, m.applied, m.pruned, m.memberPasses, m.factsReads, m.reporting, m.reportDrift,
		m.resolutions, m.generation, m.stalled, m.conflicts, m.invalid, m.memberConnected, m.memberGeneration, m.memberAppliedAt,
		m.clusterSetPropagation, m.exportPropagation} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// memberState is what one reconcile found of a member.
type memberState struct {
	name      string
	connected bool
	// holds: the member holds every object of the reconciled generation.
	holds bool
}

// recordMembers sets the per-member series of ClusterSet cs at generation gen from one
// reconcile's findings; members no longer in it lose their series.
func (m *Metrics) recordMembers(cs string, gen int64, members []memberState, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := m.held[cs]
	held := make(map[string]heldState, len(members))
	for _, ms := range members {
		h := prev[ms.name]
		if ms.holds {
			h = heldState{generation: gen, at: now}
		}
		held[ms.name] = h
		at := 0.0
		if !h.at.IsZero() {
			at = float64(h.at.Unix())
		}
		m.memberConnected.WithLabelValues(cs, ms.name).Set(boolValue(ms.connected))
		m.memberGeneration.WithLabelValues(cs, ms.name).Set(float64(h.generation))
		m.memberAppliedAt.WithLabelValues(cs, ms.name).Set(at)
	}
	// The series of members that left go; the others were set in place: deleting and
	// making 3 series a member again at every reconcile was some 9 KB a member.
	for name := range prev {
		if _, stays := held[name]; !stays {
			m.forgetMember(cs, name)
		}
	}
	m.held[cs] = held
	m.generation.WithLabelValues(cs).Set(float64(gen))
	m.stalled.WithLabelValues(cs).Set(0)
}

// forgetMember removes the series of one member of ClusterSet cs: a member that left
// and holds nothing of it any more (its status and its record go in the same
// reconcile, see releaseLeftClusters).
func (m *Metrics) forgetMember(cs, member string) {
	for _, p := range []*prometheus.GaugeVec{m.memberConnected, m.memberGeneration, m.memberAppliedAt, m.reporting} {
		p.DeleteLabelValues(cs, member)
	}
	for _, p := range []*prometheus.CounterVec{m.applied, m.pruned, m.memberPasses, m.factsReads, m.reportDrift} {
		p.DeleteLabelValues(cs, member)
	}
}

// forgetMembers removes the per-member series of ClusterSet cs.
func (m *Metrics) forgetMembers(cs string) {
	for _, p := range []*prometheus.GaugeVec{m.memberConnected, m.memberGeneration, m.memberAppliedAt} {
		p.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
	}
}

// heldState is the generation a member last held whole, and when the hub found it so.
type heldState struct {
	generation int64
	at         time.Time
}

// recordStalled says ClusterSet cs is Stalled at generation gen; the members' series
// stay as they were (they keep their last good state).
func (m *Metrics) recordStalled(cs string, gen int64) {
	m.generation.WithLabelValues(cs).Set(float64(gen))
	m.stalled.WithLabelValues(cs).Set(1)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (m *Metrics) forget(cs string) {
	m.mu.Lock()
	delete(m.held, cs)
	delete(m.propagating, cs)
	m.mu.Unlock()
	m.clusterSetPropagation.DeleteLabelValues(cs)
	m.exportPropagation.DeleteLabelValues(cs)
	m.generation.DeleteLabelValues(cs)
	m.stalled.DeleteLabelValues(cs)
	m.conflicts.DeleteLabelValues(cs)
	m.invalid.DeleteLabelValues(cs)
	m.forgetMembers(cs)
	m.reconcileDuration.DeleteLabelValues(cs)
	m.reconcilePhases.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
	m.members.DeleteLabelValues(cs)
	m.membersConnected.DeleteLabelValues(cs)
	m.exports.DeleteLabelValues(cs)
	m.errors.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
	m.applied.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
	m.pruned.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
	m.memberPasses.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
	m.factsReads.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
	m.reporting.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
	m.reportDrift.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
	m.resolutions.DeletePartialMatch(prometheus.Labels{"clusterset": cs})
}

// phaseClock times the phases of one reconcile, one after another, into
// strait_hub_reconcile_phase_seconds: each phase from the end of the one before.
type phaseClock struct {
	phases *prometheus.HistogramVec
	cs     string
	last   time.Time
}

func (m *Metrics) phaseClock(cs string, start time.Time) *phaseClock {
	return &phaseClock{phases: m.reconcilePhases, cs: cs, last: start}
}

// done ends a phase.
func (c *phaseClock) done(phase string) {
	now := time.Now()
	c.observe(phase, now.Sub(c.last))
	c.last = now
}

// observe records a phase timed apart (the status patch, which runs whatever path the
// reconcile took).
func (c *phaseClock) observe(phase string, d time.Duration) {
	c.phases.WithLabelValues(c.cs, phase).Observe(d.Seconds())
}
