package gateway

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func lease(rv, holder string, seconds int32) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName, ResourceVersion: rv}}
	if holder != "" {
		l.Spec.HolderIdentity = &holder
	}
	if seconds > 0 {
		l.Spec.LeaseDurationSeconds = &seconds
	}
	return l
}

// A standby counts the holder's term from when it saw the last change on its own clock;
// seeing the same version again (a relist, a late event) does not restart the count.
func TestStandbyCountsTheTermFromItsOwnObservation(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	s := time.Second
	var o observation
	o = o.next(lease("10", "gw1", 3), t0)
	if got := o.remaining("gw2", s, t0.Add(s)); got != 2*s {
		t.Errorf("1 s into gw1's 3 s term: wait %v, want 2s (the Lease's duration, not the standby's own 1s)", got)
	}
	o = o.next(lease("10", "gw1", 3), t0.Add(2*s))
	if got := o.remaining("gw2", s, t0.Add(3*s)); got != 0 {
		t.Errorf("the same version seen again restarted the term: wait %v at its end", got)
	}
	o = o.next(lease("11", "gw1", 3), t0.Add(2*s))
	if got := o.remaining("gw2", s, t0.Add(3*s)); got != 2*s {
		t.Errorf("after a renewal seen at 2 s: wait %v at 3 s, want 2s", got)
	}
	for _, tc := range []struct {
		name string
		l    *coordinationv1.Lease
		want time.Duration
	}{
		{"released", lease("12", "", 1), 0},
		{"held by this node's previous process", lease("12", "gw2", 3), 0},
		{"deleted: whoever held it may recreate it within its term", nil, s},
	} {
		o := o.next(tc.l, t0.Add(5*s))
		if got := o.remaining("gw2", s, t0.Add(5*s)); got != tc.want {
			t.Errorf("%s: wait %v, want %v", tc.name, got, tc.want)
		}
	}
}
