package labtest

import (
	"testing"
	"time"

	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
)

// A lab's crash bound is the default's, 3 s, lengthened by as much as its Lease timing
// lengthens a term and a standby's retry: 4.25 s for docs/agent.md's stall-prone timing.
func TestCrashBoundFollowsTheLabsLease(t *testing.T) {
	lease := topology.StallProneLease
	for _, c := range []struct {
		lease *topology.GatewayLease
		want  time.Duration
	}{
		{nil, CrashFailoverBound},
		{&lease, 4250 * time.Millisecond},
	} {
		e := &Env{upOpts: lab.UpOptions{Spec: topology.Spec{GatewayLease: c.lease}}}
		if got := e.CrashBound(); got != c.want {
			t.Errorf("lease %v: crash bound %s, want %s", c.lease, got, c.want)
		}
	}
}
