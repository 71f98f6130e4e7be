package plan

import (
	"fmt"
	"slices"
	"testing"
)

// TestServedSplicedIsTheWalk: where the splice holds, it lists what the walk over every
// export's sources lists, on the random worlds' changes under globalnet; and it does
// hold for most changes. Half the worlds hold 64 exports' names and take up to five
// changes between two plans, so that the splice of several slots (up to one in eight)
// is taken too, as 10,000 exports take it: a splice limited to one slot fails here.
func TestServedSplicedIsTheWalk(t *testing.T) {
	spliced, changed, multi := 0, 0, 0
	for seed := range randomWorlds() {
		keys, changes := 12, 1
		if seed%2 == 1 {
			keys, changes = 64, 5
		}
		w := newRandomWorldOf(seed, keys)
		if !w.globalnet {
			continue
		}
		pl := NewPlanner()
		for step := range 60 {
			what := "nothing"
			if step > 0 {
				for range 1 + w.pick(changes) {
					what = w.change()
				}
			}
			v, errs := pl.Check(w.clusterSet())
			if len(errs) > 0 {
				t.Fatalf("seed %d step %d (%s): %v", seed, step, what, errs.ToAggregate())
			}
			last, prior := pl.lastAllocations()
			p, errs := pl.Compute(v, w.observed())
			if len(errs) > 0 {
				continue
			}
			got, ok := p.servedSpliced(last, prior)
			if !ok {
				continue
			}
			spliced++
			if slotsChanged(p.exports, prior) > 1 {
				multi++
			}
			want := p.servedAnew(last)
			if d := servedDifference(got, want); d != "" {
				t.Fatalf("seed %d step %d (%s): %s", seed, step, what, d)
			}
			if len(want) > 0 {
				changed++
			}
		}
	}
	t.Logf("spliced %d (%d of several slots), changed %d", spliced, multi, changed)
	if spliced == 0 || changed == 0 || multi == 0 {
		t.Fatalf("the splice held %d times, %d of them over several slots, %d with a cluster serving other exports: the test checks too little", spliced, multi, changed)
	}
}

// randomWorlds is how many random worlds the planner's tests walk: 40, or 10 with
// -short (make test-race runs them under the race detector, several times slower).
func randomWorlds() uint64 {
	if testing.Short() {
		return 10
	}
	return 40
}

// slotsChanged counts the slots where p's exports are not prior's.
func slotsChanged(exports, prior []*exportPlan) int {
	n := 0
	for j := range min(len(exports), len(prior)) {
		if exports[j] != prior[j] {
			n++
		}
	}
	return n
}

func servedDifference(got, want map[string][]*exportPlan) string {
	for c, w := range want {
		g, ok := got[c]
		if !ok {
			return fmt.Sprintf("cluster %s serves other exports, but the splice has it unchanged", c)
		}
		if !slices.Equal(g, w) {
			return fmt.Sprintf("cluster %s serves %s, the splice says %s", c, exportKeys(w), exportKeys(g))
		}
	}
	for c, g := range got {
		if _, ok := want[c]; !ok {
			return fmt.Sprintf("the splice has cluster %s serving %s anew, the walk has it unchanged", c, exportKeys(g))
		}
	}
	return ""
}

func exportKeys(es []*exportPlan) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.key()
	}
	return out
}
