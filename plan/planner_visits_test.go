package plan_test

import (
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/bigset"
)

// TestPlannerComparesOnlyTheChangedMembersExports: the hub hands a member's facts as the
// same *MemberFacts while its informers saw no change, and the planner compares the
// objects' versions only of the exports of members whose facts came anew: none when
// nothing changed, the changed member's ten of sixty when one did, whether or not the
// spec changed too; and it takes over what new facts with the same objects hold.
func TestPlannerComparesOnlyTheChangedMembersExports(t *testing.T) {
	cs, obs := bigset.New(6, 60) // ten exports from each member
	pl := plan.NewPlanner()
	for _, step := range []struct {
		name                      string
		change                    func()
		visited, resolved, reused int
	}{
		{"the first plan", func() {}, 0, 60, 0},
		{"nothing changed", func() {}, 0, 0, 60},
		{"a new cluster IP of a service of c001", func() { bigset.ChangeServiceIP(obs, 1, "10.1.255.1") }, 10, 1, 59},
		{"nothing changed since", func() {}, 0, 0, 60},
		{"c002's facts listed anew, the same objects", func() { f := *obs[bigset.Name(2)]; obs[bigset.Name(2)] = &f }, 10, 0, 60},
		{"nothing changed since the relisting", func() {}, 0, 0, 60},
		{"a gateway of c003 moved", func() { bigset.MoveGateway(obs, 3, "198.51.100.3") }, 10, 0, 60},
		{"an export dropped from the spec", func() { cs.Spec.Exports = cs.Spec.Exports[1:] }, 0, 0, 59},
		{"a new cluster IP of a service of c004 and an export back in the spec", func() {
			bigset.ChangeServiceIP(obs, 4, "10.1.255.4")
			cs, _ = bigset.New(6, 60)
		}, 10, 2, 58},
	} {
		step.change()
		v, errs := plan.Check(cs)
		if len(errs) > 0 {
			t.Fatalf("%s: %v", step.name, errs.ToAggregate())
		}
		if _, errs := pl.Compute(v, obs); len(errs) > 0 {
			t.Fatalf("%s: %v", step.name, errs.ToAggregate())
		}
		if pl.Visited != step.visited || pl.Resolved != step.resolved || pl.Reused != step.reused {
			t.Errorf("after %s: %d exports' versions compared, %d resolved, %d reused; want %d, %d and %d",
				step.name, pl.Visited, pl.Resolved, pl.Reused, step.visited, step.resolved, step.reused)
		}
	}
}

// TestPlannerDigestsAskedFromManyGoroutines: the hub asks a plan for its members'
// digests from a goroutine per member, maybe while the planner computes the next plan,
// which takes over what the last one's digests share with its own; the digests are
// still Compute's (run with -race).
func TestPlannerDigestsAskedFromManyGoroutines(t *testing.T) {
	cs, obs := bigset.New(6, 60)
	v, errs := plan.Check(cs)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	pl := plan.NewPlanner()
	var wg sync.WaitGroup
	for step := range 8 {
		obs = maps.Clone(obs) // the last plans still read theirs
		bigset.ChangeServiceIP(obs, step%6, fmt.Sprintf("10.1.255.%d", step))
		want, errs := v.Compute(obs)
		if len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
		got, errs := pl.Compute(v, obs)
		if len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
		for _, c := range got.Clusters() {
			wg.Go(func() {
				if a, b := want.MemberDigest(c), got.MemberDigest(c); a != b {
					t.Errorf("step %d: %s's digest is %x, Compute's %x", step, c, b, a)
				}
			})
		}
	}
	wg.Wait()
}
