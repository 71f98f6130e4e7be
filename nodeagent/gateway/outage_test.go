package gateway

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// A standby whose write went unanswered during an outage counts a whole term from its
// first sight of the Lease after it, also when that sight is its watch listing the
// Lease again, unchanged, as a restarted API server makes it: counted from the sight
// before the outage, the holder's term had long run out, and the standby took the Lease
// before the holder (which held through the outage) renewed it (the basic lab's
// TestMemberAPIServerDown saw the gateway move). The fake client orders what a real API
// server cannot be made to: the watch's sight comes while reads still fail.
// TestElectionOnARealAPIServer's "an API server down for all keeps the holder" runs the
// same outage on a real one.
func TestStandbyCountsAWholeTermAfterAnOutage(t *testing.T) {
	// The fake serves no watch-list stream (no initial events, no bookmark).
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	timing := FastTiming()
	const ns = "strait-system"
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeaseName, Namespace: ns, ResourceVersion: "7"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("gw1"), LeaseDurationSeconds: ptr(int32(1)),
			RenewTime: ptr(metav1.NewMicroTime(time.Now()))},
	}
	kube := fake.NewClientset(lease)
	var readsDown, writesDown atomic.Bool
	kube.PrependReactor("*", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		down := &writesDown
		switch a.GetVerb() {
		case "watch", "list":
			return false, nil, nil
		case "get":
			down = &readsDown
		}
		if down.Load() {
			return true, nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("the API server is down")}
		}
		return false, nil, nil
	})

	var mu sync.Mutex
	var tookAt time.Time
	el := NewElector(kube, ns, "gw2", timing, func(active bool) {
		mu.Lock()
		defer mu.Unlock()
		if active && tookAt.IsZero() {
			tookAt = time.Now()
		}
	})
	took := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return tookAt
	}
	ctx, cancel := context.WithCancel(logr.NewContext(t.Context(), testr.NewWithOptions(t, testr.Options{Verbosity: 1})))
	done := make(chan struct{})
	go func() { defer close(done); el.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// The outage: gw1's term runs out on gw2's clock while its writes go unanswered.
	readsDown.Store(true)
	writesDown.Store(true)
	time.Sleep(timing.LeaseDuration + 3*timing.RetryPeriod)
	if !took().IsZero() {
		t.Fatal("gw2 became active while the API server was down")
	}
	// The API server is back: it takes writes, and gw2's watch lists the Lease again,
	// the same resourceVersion; gw2's reads still fail, so that sight is its first.
	writesDown.Store(false)
	back := time.Now()
	if err := kube.Tracker().Update(coordinationv1.SchemeGroupVersion.WithResource("leases"), lease.DeepCopy(), ns); err != nil {
		t.Fatal(err)
	}
	deadline := back.Add(timing.LeaseDuration + 2*time.Second)
	for took().IsZero() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	switch at := took(); {
	case at.IsZero():
		t.Fatalf("gw2 never took over gw1's Lease, unrenewed for %v after the API server came back", timing.LeaseDuration+2*time.Second)
	case at.Sub(back) < timing.LeaseDuration-50*time.Millisecond:
		t.Fatalf("gw2 took gw1's Lease %v after the API server came back, before a whole term (%v) in which gw1 could renew it",
			at.Sub(back).Round(time.Millisecond), timing.LeaseDuration)
	default:
		t.Logf("gw2 took over gw1's unrenewed Lease %v after the API server came back", at.Sub(back).Round(time.Millisecond))
	}
}
