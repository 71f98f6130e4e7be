package controllers

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/straitnet/strait/internal/exemplar"
)

// Propagation on the hub's own clock (docs/observability.md, "SLOs"): from the
// reconcile that first sees a new ClusterSet generation, or a new export, to the first
// reconcile that finds every member holding every object it implies. A member's new
// ServiceExport is timed from the member watch's event that brought it (exportArrived),
// as strait dns times from its watch event: the wait behind a reconcile in progress is
// part of what its owner waits for. Only what comes
// after a process's first reconcile of a ClusterSet is timed: what that reconcile finds
// was there before, and when it came is not known. Each observation carries an
// exemplar naming its event: the generation, or the export (namespace/name).

// propagationBuckets span a pass over a few members (tenths of a second) to a member
// that was unreachable for minutes.
var propagationBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

func newPropagationHistograms() (clusterSet, export *prometheus.HistogramVec) {
	clusterSet = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "strait_hub_clusterset_propagation_seconds",
		Help:    "From the hub's first reconcile of a new ClusterSet generation to the first that found every member holding every object of it (the hub's clock).",
		Buckets: propagationBuckets,
	}, []string{"clusterset"})
	export = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "strait_hub_export_propagation_seconds",
		Help:    "From the hub's first reconcile that saw an export served by a cluster (a ClusterSet entry), or from the hub's watch event of a member's new ServiceExport, to the first reconcile that found every member holding its import and EndpointSlices (the hub's clock).",
		Buckets: propagationBuckets,
	}, []string{"clusterset"})
	return clusterSet, export
}

// propagating is what the hub times for one ClusterSet.
type propagating struct {
	generation int64
	seen       time.Time
	// timed: observed already, or there before the process's first reconcile.
	timed   bool
	exports map[string]*exportSeen
	// arrived: a member's ServiceExport of an export not served yet, by name
	// (namespace/name), and when the watch of that member delivered it first.
	arrived map[string]time.Time
}

// arrivalMaxAge bounds how long a ServiceExport's arrival waits for a reconcile to
// serve it: one that never counts (a policy that ignores it, a conflict) is forgotten.
const arrivalMaxAge = 5 * time.Minute

type exportSeen struct {
	seen  time.Time
	timed bool
}

// recordPropagation takes one reconcile of ClusterSet cs at generation gen, which
// started at seen, found the served exports (namespace/name) and, at now, whether every
// member holds every object: the first time they all do after a new generation or
// export, its propagation is observed.
func (m *Metrics) recordPropagation(cs string, gen int64, exports []string, seen time.Time, everyMemberHolds bool, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, known := m.propagating[cs]
	if !known {
		// The series start at zero: the first observation is then an increase
		// Prometheus sees (a series that starts at one is not).
		m.clusterSetPropagation.WithLabelValues(cs)
		m.exportPropagation.WithLabelValues(cs)
		st = &propagating{generation: gen, timed: true, exports: map[string]*exportSeen{}}
		for _, e := range exports {
			st.exports[e] = &exportSeen{timed: true}
		}
		m.propagating[cs] = st
		return
	}
	if gen != st.generation {
		st.generation, st.seen, st.timed = gen, seen, false
	}
	if !sameKeys(st.exports, exports) {
		current := make(map[string]*exportSeen, len(exports))
		for _, e := range exports {
			if s, ok := st.exports[e]; ok {
				current[e] = s
				continue
			}
			from := seen
			if at, ok := st.arrived[e]; ok {
				if at.Before(seen) {
					from = at
				}
				delete(st.arrived, e)
			}
			current[e] = &exportSeen{seen: from}
		}
		st.exports = current
	}
	if !everyMemberHolds {
		return
	}
	if !st.timed {
		exemplar.Observe(m.clusterSetPropagation.WithLabelValues(cs), now.Sub(st.seen).Seconds(), "generation", strconv.FormatInt(gen, 10))
		st.timed = true
	}
	for name, s := range st.exports {
		if !s.timed {
			exemplar.Observe(m.exportPropagation.WithLabelValues(cs), now.Sub(s.seen).Seconds(), "export", name)
			s.timed = true
		}
	}
}

// exportArrived notes that the watch of a member delivered, at, a ServiceExport of
// name (namespace/name) for ClusterSet cs: if a reconcile serves that export next, its
// propagation is timed from at. Only names not served yet are noted, and only once
// the ClusterSet was reconciled by this process (its first reconcile times nothing):
// an informer's first list of a big member notes nothing.
func (m *Metrics) exportArrived(cs, name string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, known := m.propagating[cs]
	if !known {
		return
	}
	if _, served := st.exports[name]; served {
		return
	}
	if _, noted := st.arrived[name]; noted {
		return
	}
	if st.arrived == nil {
		st.arrived = map[string]time.Time{}
	}
	for n, t := range st.arrived {
		if at.Sub(t) > arrivalMaxAge {
			delete(st.arrived, n)
		}
	}
	st.arrived[name] = at
}

// sameKeys says whether m's keys are exactly keys (which holds no duplicates): most
// reconciles serve the exports the last one did, and a map of 10,000 need not be made
// again for them.
func sameKeys[V any](m map[string]V, keys []string) bool {
	if len(m) != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}
