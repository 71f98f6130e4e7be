package agent

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestActiveHolder(t *testing.T) {
	now := time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC)
	const renewDeadline = 700 * time.Millisecond
	lease := func(holder string, renewedAgo time.Duration) *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		if holder != "" {
			l.Spec.HolderIdentity = &holder
			one := int32(1)
			l.Spec.LeaseDurationSeconds = &one
		}
		rt := metav1.NewMicroTime(now.Add(-renewedAgo))
		l.Spec.RenewTime = &rt
		return l
	}
	released := func(ago time.Duration) *coordinationv1.Lease {
		l := lease("", ago)
		one := int32(1)
		l.Spec.LeaseDurationSeconds = &one
		return l
	}
	standby := holderState{settled: true, capable: true}
	for _, tc := range []struct {
		name       string
		lease      *coordinationv1.Lease
		st         holderState
		wantHolder string
		wantWait   bool
	}{
		{"no Lease", nil, standby, "", false},
		{"another node holds it", lease("gw-2", 10*time.Millisecond), standby, "gw-2", false},
		{"the elector says active, the cache has not seen it", lease("gw-2", 900*time.Millisecond), holderState{active: true, settled: true, capable: true}, "gw-1", false},
		{"the elector has just taken it, the cache saw the write first", lease("gw-1", 5*time.Millisecond), standby, "", true},
		{"the previous process held it", lease("gw-1", 2*time.Second), holderState{capable: true}, "", true},
		{"stepped down at its renew deadline, taking its own Lease again", lease("gw-1", renewDeadline+100*time.Millisecond), standby, "", true},
		{"still taking it again as the term runs out", lease("gw-1", time.Second+renewDeadline-time.Millisecond), standby, "", true},
		{"stepped down, its retake out of time: a stale cache still names this node", lease("gw-1", time.Second+renewDeadline), standby, "", false},
		{"no longer gateway-capable", lease("gw-1", 5*time.Millisecond), holderState{settled: true}, "", false},
		{"released a moment ago: a standby takes over within its term", released(300 * time.Millisecond), standby, "", true},
		{"released a moment ago, seen by a plain node", released(300 * time.Millisecond), holderState{settled: true}, "", true},
		{"released, and no one took over within its term", released(time.Second), holderState{settled: true}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder, wait := activeHolder("gw-1", tc.lease, tc.st, renewDeadline, now)
			if holder != tc.wantHolder || wait != tc.wantWait {
				t.Errorf("activeHolder = %q, wait %v; want %q, wait %v", holder, wait, tc.wantHolder, tc.wantWait)
			}
		})
	}
}
