package plan

import (
	"fmt"
	"slices"
	"testing"
)

// TestServedSplicedIsTheWalk: where the splice holds, it lists what the walk over every
// export's sources lists, on the random worlds' changes under globalnet; and it does
// hold for most changes.
func TestServedSplicedIsTheWalk(t *testing.T) {
	spliced, changed := 0, 0
	for seed := range uint64(40) {
		w := newRandomWorld(seed)
		if !w.globalnet {
			continue
		}
		pl := NewPlanner()
		for step := range 60 {
			what := "nothing"
			if step > 0 {
				what = w.change()
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
			want := p.servedAnew(last)
			if d := servedDifference(got, want); d != "" {
				t.Fatalf("seed %d step %d (%s): %s", seed, step, what, d)
			}
			if len(want) > 0 {
				changed++
			}
		}
	}
	t.Logf("spliced %d changed %d", spliced, changed)
	if spliced == 0 || changed == 0 {
		t.Fatalf("the splice held %d times, %d of them with a cluster serving other exports: the test checks nothing", spliced, changed)
	}
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
