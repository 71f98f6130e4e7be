package benchcpu

import (
	"runtime"
	"slices"
	"strconv"
	"time"
)

// RefUnit is the metric of the CPU time per op in units of the reference work:
// cpu-ns/op over the CPU nanoseconds one unit of the reference took on the same machine
// around the loop. The same code reads about the same cpu-ref/op on a machine that is
// slower or faster that day, where cpu-ns/op moves with it (on 2026-11-29 and -30 this
// machine ran unchanged code at 1.3 to 2.5 times its calibrated cpu-ns/op, no steal).
const RefUnit = "cpu-ref/op"

// refKeys is the size of one round of the reference work.
const refKeys = 1 << 12

// refCPU is the least CPU time a reference measurement spends in its rounds.
const refCPU = 30 * time.Millisecond

// reference is the fixed work the machine's speed is measured by: names of services
// held in a map, looked up, sorted and hashed, the kinds of work the planner's and the
// resolver's loops do. Its rounds allocate nothing, so no garbage collection (whose
// cost grows with whatever heap the benchmark keeps) is counted in it.
type reference struct {
	names  []string
	order  []string
	sorted []string
	index  map[string]int
}

func newReference() *reference {
	r := &reference{names: make([]string, refKeys), order: make([]string, refKeys),
		sorted: make([]string, refKeys), index: make(map[string]int, refKeys)}
	for i := range r.names {
		r.names[i] = "svc-" + strconv.Itoa(i) + ".ns-" + strconv.Itoa(i%61) + ".svc.clusterset.local"
	}
	for i := range r.order {
		r.order[i] = r.names[i*7919%refKeys]
	}
	// A first round faults the map's and the slices' pages in, which the measured ones
	// would otherwise count.
	r.round()
	return r
}

// measure is the CPU time one unit of the reference takes now: rounds until at least
// refCPU has passed, over their units. It first finishes the garbage collection of
// what the benchmark left, whose background marking would otherwise be counted in the
// reference's CPU time (a loop of the planner, 70 MB an op, read its reference unit at
// three times the machine's).
func (r *reference) measure() time.Duration {
	runtime.GC()
	var sink uint64
	rounds := 0
	start := Used()
	for rounds < 3 || Used()-start < refCPU {
		sink += r.round()
		rounds++
	}
	used := Used() - start
	if sink == 1 { // never: keeps the rounds from being optimized away
		rounds++
	}
	return used / time.Duration(rounds*refKeys)
}

// round does one round of the reference work over refKeys names.
func (r *reference) round() uint64 {
	clear(r.index)
	for i, k := range r.order {
		r.index[k] = i
	}
	var sum uint64
	for _, k := range r.names {
		sum += uint64(r.index[k])
	}
	copy(r.sorted, r.order)
	slices.Sort(r.sorted)
	h := uint64(14695981039346656037) // FNV-1a
	for _, k := range r.sorted {
		for i := 0; i < len(k); i++ {
			h = (h ^ uint64(k[i])) * 1099511628211
		}
	}
	return sum ^ h
}
