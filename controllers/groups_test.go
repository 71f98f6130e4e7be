package controllers

import (
	"maps"
	"testing"

	"github.com/straitnet/strait/plan"
)

// changedGroups names every group whose digest moved, and those only one pass had:
// a new export, and a gone one (whose objects the pass prunes).
func TestChangedGroups(t *testing.T) {
	last := plan.GroupsOf([]string{"", "a/gone", "a/same", "b/moved"}, []uint64{1, 2, 3, 4})
	cur := plan.GroupsOf([]string{"", "a/new", "a/same", "b/moved", "c/new"}, []uint64{1, 5, 3, 6, 7})
	want := map[string]bool{"a/gone": true, "a/new": true, "b/moved": true, "c/new": true}
	if got := changedGroups(last, cur); !maps.Equal(got, want) {
		t.Errorf("changedGroups = %v, want %v", got, want)
	}
	if got := changedGroups(plan.Groups{}, cur); len(got) != len(cur.Keys) {
		t.Errorf("from no last pass: %v, want every group", got)
	}
	if got := changedGroups(cur, cur); len(got) != 0 {
		t.Errorf("nothing changed: %v", got)
	}
}
