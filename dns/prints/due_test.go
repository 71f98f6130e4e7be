package prints

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/connections"
)

// TestALatencyChangeWaitsAndAStateChangeDoesNot walks one reporter through a member's
// Peer c2 going Connected, its latency changing, then Error: a change of latency alone
// is written LatencyEvery after the Membership last held the report, not sooner, also
// while the echo of a write is on its way; a change of state is written at once.
func TestALatencyChangeWaitsAndAStateChangeDoesNot(t *testing.T) {
	const every = 30 * time.Second
	r := &reporter{opts: Options{LatencyEvery: every}}
	m := &straitv1.Membership{ObjectMeta: metav1.ObjectMeta{UID: "m1"}}
	t0 := time.Unix(1_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	of := func(state string, latency int64) report {
		c := connections.Summarize([]straitv1.ConnectionStatus{{Cluster: "c2", State: state, LatencyMicros: latency}})
		return report{prints: []straitv1.MemberPrint{{ClusterSet: own, Kind: "Peer", Count: 1, Sum: "0000000000000001"}}, conns: &c}
	}
	holds := func(rep report) { m.Status.Prints, m.Status.Connections = rep.prints, rep.conns }
	up100, up200, up500 := of(straitv1.PeerConnected, 100), of(straitv1.PeerConnected, 200), of(straitv1.PeerConnected, 500)
	down := of(straitv1.PeerError, 0)

	for i, step := range []struct {
		what      string
		now       time.Time
		holds     *report // what the Membership holds now; nil: as before
		rep       report
		write     bool
		held      time.Time
		afterward func()
	}{
		{what: "the first report", now: at(0), rep: up100, write: true},
		{what: "its echo on the way", now: at(50 * time.Millisecond), rep: up100},
		{what: "a new latency while the echo is on the way", now: at(60 * time.Millisecond), rep: up200, held: at(every)},
		{what: "the echo, the new latency still held", now: at(100 * time.Millisecond), holds: &up100, rep: up200, held: at(every)},
		{what: "a latency held until the interval is up", now: at(every - time.Millisecond), rep: up200, held: at(every)},
		{what: "the interval up", now: at(every), rep: up200, write: true},
		{what: "its echo", now: at(every + 100*time.Millisecond), holds: &up200, rep: up200},
		{what: "Connected → Error at once", now: at(every + 200*time.Millisecond), rep: down, write: true},
		{what: "its echo", now: at(every + 300*time.Millisecond), holds: &down, rep: down},
		{what: "Error → Connected at once", now: at(every + time.Second), rep: up500, write: true},
		{what: "another replica writes Error over it", now: at(every + 2*time.Second), holds: &down, rep: up500},
		{what: "its echo overdue: written again", now: at(every + time.Second + echoWait), rep: up500, write: true},
	} {
		if step.holds != nil {
			holds(*step.holds)
		}
		write, held := r.due(m, step.rep, step.now)
		if write != step.write || !held.Equal(step.held) {
			t.Fatalf("step %d, %s: write %v, held until %v; want %v, %v", i, step.what, write, held.Sub(t0), step.write, step.held.Sub(t0))
		}
		if write {
			r.wrote(m.UID, step.rep, step.now)
		}
	}
}
