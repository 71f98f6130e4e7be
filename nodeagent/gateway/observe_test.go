package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
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

// A standby that finds the Lease taken by another at the moment it writes (its create
// refused: the Lease is there) and then reads none (the holder's Lease was deleted
// since) counts a whole term from that read, not from its older sight of none: the
// holder recreates its Lease within its renew deadline. Counting from the older sight,
// it created the Lease at once, and the holder, finding it taken, stepped down (CI,
// 2026-12-01: TestElectionOnARealAPIServer/a_deleted_Lease_stays_with_its_holder).
// The API server here is client-go's fake, so that the Lease can appear and go between
// two of the standby's requests every time; the real one is in election_test.go.
func TestStandbyRefusedACreateCountsATermFromItsNextRead(t *testing.T) {
	kube := fake.NewClientset()
	var mu sync.Mutex
	var creates []time.Time
	kube.PrependReactor("create", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if creates = append(creates, time.Now()); len(creates) == 1 {
			// gw2 took the Lease first, and it was deleted before gw1 read it.
			return true, nil, apierrors.NewAlreadyExists(coordinationv1.Resource("leases"), LeaseName)
		}
		return false, nil, nil
	})
	timing := Timing{LeaseDuration: time.Second, RenewDeadline: 500 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}
	if err := timing.Validate(); err != nil {
		t.Fatal(err)
	}
	active := make(chan struct{})
	el := NewElector(kube, "strait-system", "gw1", timing, func(on bool) {
		if on {
			close(active)
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); el.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-active:
	case <-time.After(3 * timing.LeaseDuration):
		t.Fatalf("gw1 did not take the free Lease within %v", 3*timing.LeaseDuration)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(creates) != 2 {
		t.Fatalf("gw1 created the Lease %d times, want 2 (refused, then taken)", len(creates))
	}
	// The read that showed none again comes right after the refusal.
	if waited := creates[1].Sub(creates[0]); waited < timing.LeaseDuration-100*time.Millisecond {
		t.Errorf("gw1 created the Lease again %v after its create was refused, want a whole term (%v) after it read none",
			waited.Round(time.Millisecond), timing.LeaseDuration)
	}
}
