package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/straitnet/strait/test/clusters"
)

// TestElectionOnARealAPIServer runs the election's tests against one real
// kube-apiserver; each campaigns in a namespace of its own.
func TestElectionOnARealAPIServer(t *testing.T) {
	api := clusters.NewCluster(t).Config
	for _, tc := range []struct {
		name string
		test func(*testing.T, *rest.Config)
	}{
		{"two candidates are never both active", twoCandidatesAreNeverBothActive},
		{"a released Lease is taken at once", releasedLeaseIsTakenAtOnce},
		{"a cut-off holder steps down and is replaced in time", cutOffHolderStepsDownAndIsReplaced},
		{"a deleted Lease stays with its holder", deletedLeaseStaysWithItsHolder},
		{"a holder that takes its own Lease again has taken nothing over", ownLeaseAgainIsNoTakeover},
		{"an API server down for all keeps the holder", apiServerDownKeepsTheHolder},
		{"a holder cut off alone steps down although it may hold", cutOffHolderThatMayHoldStepsDown},
		{"a dead holder's data path is fenced off before the standby takes over", deadHolderIsFencedOff},
		{"a holder whose fence cannot be written steps down until it can", unwritableFenceStepsDown},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.test(t, api) })
	}
}

// terms records when each candidate became active and stopped being active, as its
// onChange saw it.
type terms struct {
	mu     sync.Mutex
	events []termEvent
}

type termEvent struct {
	who    string
	active bool
	at     time.Time
}

func (r *terms) add(who string, active bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, termEvent{who: who, active: active, at: time.Now()})
}

// saysActive is what who's onChange was told last.
func (r *terms) saysActive(who string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range slices.Backward(r.events) {
		if e.who == who {
			return e.active
		}
	}
	return false
}

// overlaps lists every moment two candidates were active at once.
func (r *terms) overlaps(end time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	type term struct {
		who        string
		start, end time.Time
	}
	var done []term
	open := map[string]time.Time{}
	for _, e := range r.events {
		if e.active {
			open[e.who] = e.at
			continue
		}
		done = append(done, term{e.who, open[e.who], e.at})
		delete(open, e.who)
	}
	for who, start := range open {
		done = append(done, term{who, start, end})
	}
	var out []string
	for i, a := range done {
		for _, b := range done[i+1:] {
			if a.start.Before(b.end) && b.start.Before(a.end) {
				out = append(out, fmt.Sprintf("%s [%v, %v] and %s [%v, %v]", a.who, a.start.Format(time.StampMicro),
					a.end.Format(time.StampMicro), b.who, b.start.Format(time.StampMicro), b.end.Format(time.StampMicro)))
			}
		}
	}
	return out
}

// candidate is one gateway-capable node's elector with its own connection to the API
// server, which the test can cut.
type candidate struct {
	name    string
	cut     *clusters.Cut
	el      *Elector
	fence   *fence
	reports *reports
	cancel  context.CancelFunc
	done    chan struct{}
}

// reports counts what the elector reported (WithReport): renewals by result and
// step-downs by reason.
type reports struct {
	mu        sync.Mutex
	renewals  map[bool]int
	stepDowns map[string]int
}

func (r *reports) report() Report {
	r.renewals, r.stepDowns = map[bool]int{}, map[string]int{}
	return Report{
		Renewal: func(_ time.Duration, ok bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.renewals[ok]++
		},
		StepDown: func(reason string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.stepDowns[reason]++
		},
	}
}

// sum adds up the counts of several candidates' reports.
func sumReports(cs ...*candidate) (ok, failed int, stepDowns map[string]int) {
	stepDowns = map[string]int{}
	for _, c := range cs {
		c.reports.mu.Lock()
		ok, failed = ok+c.reports.renewals[true], failed+c.reports.renewals[false]
		for k, v := range c.reports.stepDowns {
			stepDowns[k] += v
		}
		c.reports.mu.Unlock()
	}
	return ok, failed, stepDowns
}

// fence stands in for the kernel's: it keeps the last term the elector told it, and
// once the candidate is dead (its process gone) it keeps that for good. While broken is
// set, every write fails with it and the fence keeps what it had, as a failed nftables
// transaction does.
type fence struct {
	mu     sync.Mutex
	until  time.Time
	dead   bool
	broken error
	// writes counts the writes tried, failed ones included; closes, the writes that
	// closed an open term.
	writes, closes int
}

func (f *fence) tell(until time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.broken != nil {
		return f.broken
	}
	if f.dead {
		return nil
	}
	if until.IsZero() && time.Now().Before(f.until) {
		f.closes++
	}
	f.until = until
	return nil
}

// closed counts the writes that closed the fence while its term was open.
func (f *fence) closed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closes
}

// breakWith makes every write fail with err from now on; nil heals the fence.
func (f *fence) breakWith(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.broken = err
}

func (f *fence) tried() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// die freezes the fence as the kernel holds it when the agent is killed.
func (f *fence) die() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dead = true
	return f.until
}

func (f *fence) term() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.until
}

func campaign(t *testing.T, api *rest.Config, ns, name string, rec *terms) *candidate {
	t.Helper()
	return campaignAsking(t, api, ns, name, rec, nil)
}

// campaignAsking is campaign with a holder that may hold through an API server that
// does not answer, as long as none of peers() reaches it (each asked as the agent asks
// the other gateways: its Probe).
func campaignAsking(t *testing.T, api *rest.Config, ns, name string, rec *terms, peers func() []*candidate) *candidate {
	t.Helper()
	return campaignTimed(t, api, ns, name, rec, peers, FastTiming())
}

// campaignTimed is campaignAsking with the given election timing.
func campaignTimed(t *testing.T, api *rest.Config, ns, name string, rec *terms, peers func() []*candidate, timing Timing) *candidate {
	t.Helper()
	c := &candidate{name: name, cut: &clusters.Cut{}, fence: &fence{}, reports: &reports{}, done: make(chan struct{})}
	kube, err := kubernetes.NewForConfig(c.cut.Config(api))
	if err != nil {
		t.Fatal(err)
	}
	c.el = NewElector(kube, ns, name, timing, func(active bool) { rec.add(name, active) }).WithFence(c.fence.tell).
		WithReport(c.reports.report())
	if peers != nil {
		c.el.WithConfirm(func(ctx context.Context) bool {
			for _, p := range peers() {
				if p.name != name && p.el.Probe(ctx) == nil {
					return false
				}
			}
			return true
		})
	}
	// The elector's own log (taking over, stepping down and why) shows with a failure.
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), testr.New(t).WithName(name)))
	c.cancel = cancel
	go func() { defer close(c.done); c.el.Run(ctx) }()
	t.Cleanup(c.stop)
	return c
}

// stop ends the campaign as SIGTERM does: a holder releases the Lease.
func (c *candidate) stop() {
	c.cancel()
	<-c.done
}

// electionNamespace creates a namespace for one test's Lease.
func electionNamespace(t *testing.T, api *rest.Config) string {
	t.Helper()
	kube, err := kubernetes.NewForConfig(api)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "election-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// activeOne waits until exactly one of cs is active and returns it.
func activeOne(t *testing.T, timeout time.Duration, cs ...*candidate) *candidate {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var act []*candidate
		for _, c := range cs {
			if c.el.Active() {
				act = append(act, c)
			}
		}
		if len(act) == 1 {
			return act[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d candidates active after %v, want 1", len(act), timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// until polls cond every millisecond (require.Eventually's interval is too coarse for
// the figures these tests measure) and returns how long it took to hold.
func until(t *testing.T, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

func spread(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("min %v, median %v, max %v over %d", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]), len(s))
}

// Three candidates through rounds of releases (every standby races for the freed
// Lease) and of holders cut off the API server and later reconnected: at no moment are
// two of them active.
func twoCandidatesAreNeverBothActive(t *testing.T, api *rest.Config) {
	ns := electionNamespace(t, api)
	rec := &terms{}
	cs := map[string]*candidate{}
	for _, n := range []string{"gw1", "gw2", "gw3"} {
		cs[n] = campaign(t, api, ns, n, rec)
	}
	all := func() []*candidate { return []*candidate{cs["gw1"], cs["gw2"], cs["gw3"]} }
	for round := range 16 {
		holder := activeOne(t, 5*time.Second, all()...)
		if round%2 == 0 {
			holder.stop()
			cs[holder.name] = campaign(t, api, ns, holder.name, rec)
			continue
		}
		holder.cut.Set(true)
		var others []*candidate
		for _, c := range all() {
			if c != holder {
				others = append(others, c)
			}
		}
		next := activeOne(t, 5*time.Second, others...)
		if holder.el.Active() {
			t.Fatalf("round %d: %s cut off and still active beside %s", round, holder.name, next.name)
		}
		holder.cut.Set(false)
		// Back online, it sees the new holder and stays a standby.
		time.Sleep(FastTiming().RetryPeriod)
		if holder.el.Active() {
			t.Fatalf("round %d: %s active again beside %s", round, holder.name, next.name)
		}
	}
	for _, c := range all() {
		c.stop()
	}
	requireNoOverlap(t, rec)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if n := len(rec.events); n < 32 {
		t.Fatalf("only %d activity changes in 16 rounds", n)
	}
}

// A holder that stops (SIGTERM) releases the Lease; the standby's watch sees that and it
// takes over at once, not after the term.
func releasedLeaseIsTakenAtOnce(t *testing.T, api *rest.Config) {
	ns := electionNamespace(t, api)
	rec := &terms{}
	cs := map[string]*candidate{"gw1": campaign(t, api, ns, "gw1", rec), "gw2": campaign(t, api, ns, "gw2", rec)}
	var took []time.Duration
	for range 6 {
		holder := activeOne(t, 5*time.Second, cs["gw1"], cs["gw2"])
		other := cs[map[string]string{"gw1": "gw2", "gw2": "gw1"}[holder.name]]
		// A standby that saw the holder: one that first looks after the release finds a
		// free Lease, and does not know when its last term ended. (Settled is not
		// enough: on a loaded API server it comes by itself after RenewDeadline.)
		until(t, 2*time.Second, other.name+" has seen "+holder.name+" hold", func() bool { return other.el.StandbyOf() == holder.name })
		start := time.Now()
		holder.stop()
		// The old data path carries traffic while the new gateway converges, for no
		// longer than the term its last renewal gave it.
		if left := time.Until(holder.fence.term()); left <= 0 || left > FastTiming().LeaseDuration {
			t.Errorf("%s released the Lease with %v of its fence's term left, want (0, %v]", holder.name, left, FastTiming().LeaseDuration)
		}
		until(t, 2*time.Second, other.name+" takes over", other.el.Active)
		took = append(took, time.Since(start))
		// The failover is timed from the release, as the new holder saw it.
		if from, prev := other.el.Takeover(); prev != holder.name || from.Before(start) || from.After(time.Now()) {
			t.Errorf("%s took over from %q released at %s; want %s, released between the stop (%s) and now",
				other.name, prev, from.Format(time.StampMicro), holder.name, start.Format(time.StampMicro))
		}
		cs[holder.name] = campaign(t, api, ns, holder.name, rec)
	}
	t.Logf("released Lease taken over in %s", spread(took))
	if slices.Max(took) > 300*time.Millisecond {
		t.Errorf("a released Lease was taken over after %v, want < 300ms", slices.Max(took))
	}
	requireNoOverlap(t, rec)
}

// A holder cut off the API server steps down within its renew deadline, and the
// standby takes over once the term it last saw renewed has run out.
func cutOffHolderStepsDownAndIsReplaced(t *testing.T, api *rest.Config) {
	ns := electionNamespace(t, api)
	rec := &terms{}
	timing := FastTiming()
	cs := map[string]*candidate{"gw1": campaign(t, api, ns, "gw1", rec), "gw2": campaign(t, api, ns, "gw2", rec)}
	var stepped, took []time.Duration
	for range 4 {
		holder := activeOne(t, 5*time.Second, cs["gw1"], cs["gw2"])
		other := cs[map[string]string{"gw1": "gw2", "gw2": "gw1"}[holder.name]]
		// Cut at any point of the renewal cycle, not just after the takeover.
		time.Sleep(time.Duration(rand.Int64N(int64(timing.RetryPeriod))))
		start := time.Now()
		holder.cut.Set(true)
		stepped = append(stepped, until(t, 2*time.Second, holder.name+" steps down", func() bool { return !holder.el.Active() }))
		// Active turns false by itself at the deadline; the elector's goroutine, waking
		// then, steps down and leaves its fence to the last renewal's term (no write),
		// which a standby counts from its sight of that renewal: the data path closes
		// before anyone can take over.
		until(t, 50*time.Millisecond, holder.name+" steps down", func() bool { return !rec.saysActive(holder.name) })
		fenced := holder.fence.term()
		if fenced.IsZero() || fenced.After(start.Add(timing.LeaseDuration)) {
			t.Errorf("%s stepped down with its fence's term at %s, want the last renewal's, ending within a term of the cut at %s",
				holder.name, fenced.Format(time.StampMicro), start.Format(time.StampMicro))
		}
		until(t, 3*time.Second, other.name+" takes over", other.el.Active)
		took = append(took, time.Since(start))
		// The failover is timed from the cut-off holder's term running out, as the new
		// holder counted it: a whole term after the last renewal it saw, which came at
		// most a retry period (and an API server's answer) before the cut.
		earliest := start.Add(timing.LeaseDuration - timing.RetryPeriod - 200*time.Millisecond)
		from, prev := other.el.Takeover()
		if prev != holder.name || from.Before(earliest) || from.After(time.Now()) {
			t.Errorf("%s took over from %q whose term ended at %s; want %s, its term ending between %s and now",
				other.name, prev, from.Format(time.StampMicro), holder.name, earliest.Format(time.StampMicro))
		}
		if !fenced.Before(from) {
			t.Errorf("%s's fence stayed open to %s, past the end of its term as %s counted it (%s)",
				holder.name, fenced.Format(time.StampMicro), other.name, from.Format(time.StampMicro))
		}
		holder.cut.Set(false)
	}
	t.Logf("cut-off holder stepped down after %s; replaced after %s (lease %v, renew deadline %v, retry %v)",
		spread(stepped), spread(took), timing.LeaseDuration, timing.RenewDeadline, timing.RetryPeriod)
	// 50 ms for polling Active() on a loaded machine.
	if m := slices.Max(stepped); m > timing.RenewDeadline+50*time.Millisecond {
		t.Errorf("a cut-off holder stayed active %v, longer than the renew deadline %v", m, timing.RenewDeadline)
	}
	if m := slices.Max(took); m > timing.LeaseDuration+500*time.Millisecond {
		t.Errorf("a cut-off holder was replaced after %v, want < lease %v + 500ms", m, timing.LeaseDuration)
	}
	requireNoOverlap(t, rec)
	// What the metrics hear (strait_agent_gateway_step_downs_total and
	// strait_agent_gateway_lease_renewal_seconds): every step-down a late one, a failed
	// renewal in every round (each holder was cut within a retry period of taking
	// over, before its first renewal was due), and the last holder's renewals ok.
	until(t, 2*time.Second, "the last holder's renewals reported", func() bool { ok, _, _ := sumReports(cs["gw1"], cs["gw2"]); return ok > 0 })
	_, failed, stepDowns := sumReports(cs["gw1"], cs["gw2"])
	if want := map[string]int{StepDownLate: 4}; !maps.Equal(stepDowns, want) || failed < 4 {
		t.Errorf("the electors reported %d failed renewals and step-downs %v; want at least 4 failed and %v", failed, stepDowns, want)
	}
}

// A gateway that took the Lease over, stepped down (its renewals cut off) and then took
// its own Lease again, nobody else campaigning, reports no takeover: the agent times a
// failover from Takeover each time the node becomes active, and the one it had timed
// already must not be timed again from its old start. Its fence was never closed by a
// write in between: the step-down leaves it to the last renewal's term, and the retake
// opens a new one (an API server that answered late cost no flap of the data path).
func ownLeaseAgainIsNoTakeover(t *testing.T, api *rest.Config) {
	ns := electionNamespace(t, api)
	rec := &terms{}
	gw1, gw2 := campaign(t, api, ns, "gw1", rec), campaign(t, api, ns, "gw2", rec)
	holder := activeOne(t, 5*time.Second, gw1, gw2)
	other := map[*candidate]*candidate{gw1: gw2, gw2: gw1}[holder]
	holder.cut.Set(true)
	until(t, 3*time.Second, other.name+" takes over", other.el.Active)
	if _, prev := other.el.Takeover(); prev != holder.name {
		t.Fatalf("%s took over from %q, want %s", other.name, prev, holder.name)
	}
	holder.stop()
	other.cut.Set(true)
	until(t, 2*time.Second, other.name+" steps down, cut off", func() bool { return !rec.saysActive(other.name) })
	other.cut.Set(false)
	until(t, 3*time.Second, other.name+" holds its own Lease again", other.el.Active)
	if from, prev := other.el.Takeover(); !from.IsZero() || prev != "" {
		t.Errorf("%s took its own Lease again and reports a takeover from %q at %s, want none", other.name, prev, from.Format(time.StampMicro))
	}
	if n := other.fence.closed(); n > 0 {
		t.Errorf("%s closed its fence %d times while it stepped down and took its own Lease again, want none: the term runs out by itself", other.name, n)
	}
	other.stop()
	requireNoOverlap(t, rec)
}

// Someone deletes the Lease (kubectl delete lease): the holder recreates it at its next
// renewal, and the standby, which waits a whole term after seeing it go, never takes
// over meanwhile.
func deletedLeaseStaysWithItsHolder(t *testing.T, api *rest.Config) {
	ns := electionNamespace(t, api)
	rec := &terms{}
	// What is tested is the order (the holder writes the Lease again before a standby
	// has counted a whole term since it went), not how fast: with FastTiming an API
	// server that takes over RenewDeadline (0.7 s) to answer, as an envtest one does
	// beside the other packages' on two cores, rightly moves the gateway, and with a
	// term of 3 s so did one beside two other packages' API servers (go test -p 3).
	timing := Timing{LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: 250 * time.Millisecond}
	if err := timing.Validate(); err != nil {
		t.Fatal(err)
	}
	cs := []*candidate{campaignTimed(t, api, ns, "gw1", rec, nil, timing), campaignTimed(t, api, ns, "gw2", rec, nil, timing)}
	// A candidate that finds no Lease may wait up to a term before it takes one.
	holder := activeOne(t, timing.LeaseDuration+5*time.Second, cs...)
	kube, err := kubernetes.NewForConfig(api)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := kube.CoordinationV1().Leases(ns).Delete(context.Background(), LeaseName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		took := until(t, timing.LeaseDuration, "the Lease recreated", func() bool {
			l, err := kube.CoordinationV1().Leases(ns).Get(context.Background(), LeaseName, metav1.GetOptions{})
			return err == nil && holderOf(l) == holder.name
		})
		t.Logf("recreated by %s after %v", holder.name, took.Round(time.Millisecond))
		time.Sleep(timing.LeaseDuration)
		if now := activeOne(t, time.Second, cs...); now != holder {
			t.Fatalf("the gateway moved from %s to %s after the Lease was deleted", holder.name, now.name)
		}
	}
	requireNoOverlap(t, rec)
}

// The API server is down for every candidate: the holder, whose peers confirm that
// they cannot reach it either, holds (stays active); the standby cannot take over; when
// the API server is back the holder renews and keeps the Lease.
func apiServerDownKeepsTheHolder(t *testing.T, api *rest.Config) {
	rec, cs := askingPair(t, api)
	timing := FastTiming()
	for round := range 3 {
		holder := activeOne(t, 5*time.Second, cs...)
		for _, c := range cs {
			// Down and back as a restarted API server: the standby's watch lists the
			// Lease again, unchanged, and must not count the holder's term from
			// before the outage.
			c.cut.Restart()
		}
		until(t, 2*time.Second, holder.name+" holds", holder.el.Holding)
		time.Sleep(3 * timing.LeaseDuration)
		if now := activeOne(t, time.Second, cs...); now != holder || !holder.el.Holding() {
			t.Fatalf("round %d: with the API server down, %s is active (holding %v), want %s to hold", round, now.name, now.el.Holding(), holder.name)
		}
		for _, c := range cs {
			c.cut.Set(false)
		}
		until(t, 2*time.Second, holder.name+" renews again", func() bool { return !holder.el.Holding() })
		time.Sleep(2 * timing.LeaseDuration)
		if now := activeOne(t, time.Second, cs...); now != holder {
			t.Errorf("round %d: the gateway moved from %s to %s when the API server came back", round, holder.name, now.name)
		}
	}
	requireNoOverlap(t, rec)
}

// A holder that may hold, cut off the API server while the standby still reaches it:
// the standby's probe answers, so the holder steps down within the term and the standby
// takes over; never both active.
func cutOffHolderThatMayHoldStepsDown(t *testing.T, api *rest.Config) {
	rec, cs := askingPair(t, api)
	timing := FastTiming()
	var stepped []time.Duration
	for range 3 {
		holder := activeOne(t, 5*time.Second, cs...)
		time.Sleep(time.Duration(rand.Int64N(int64(timing.RetryPeriod))))
		holder.cut.Set(true)
		stepped = append(stepped, until(t, 2*time.Second, holder.name+" steps down", func() bool { return !holder.el.Active() }))
		if holder.el.Holding() {
			t.Errorf("%s held although the other gateway reaches the API server", holder.name)
		}
		activeOne(t, 3*time.Second, cs...)
		holder.cut.Set(false)
	}
	t.Logf("a holder cut off alone stepped down after %s", spread(stepped))
	if m := slices.Max(stepped); m >= timing.LeaseDuration {
		t.Errorf("a cut-off holder stayed active %v, not less than the lease %v a standby waits", m, timing.LeaseDuration)
	}
	requireNoOverlap(t, rec)
}

// The holder dies (SIGKILL) at any point of its renewal cycle: nothing steps down or
// releases, so what stops its data path is the term its fence was last given. That term
// must have ended before the standby becomes active, by the fence's margin, for every
// standby counts the term from when it saw the renewal, which is after it was sent.
func deadHolderIsFencedOff(t *testing.T, api *rest.Config) {
	ns := electionNamespace(t, api)
	rec := &terms{}
	timing := FastTiming()
	cs := map[string]*candidate{"gw1": campaign(t, api, ns, "gw1", rec), "gw2": campaign(t, api, ns, "gw2", rec)}
	var margins, open []time.Duration
	for range 4 {
		holder := activeOne(t, 5*time.Second, cs["gw1"], cs["gw2"])
		other := cs[map[string]string{"gw1": "gw2", "gw2": "gw1"}[holder.name]]
		time.Sleep(time.Duration(rand.Int64N(int64(timing.RetryPeriod))))
		// Killed: no request of its reaches the API server any more, and the kernel
		// keeps the fence as it was.
		holder.cut.Set(true)
		killed := time.Now()
		fenced := holder.fence.die()
		until(t, 3*time.Second, other.name+" takes over", other.el.Active)
		took := time.Now()
		open = append(open, fenced.Sub(killed))
		margins = append(margins, took.Sub(fenced))
		if !fenced.Before(took) {
			t.Errorf("%s's data path was open until %v, after %s took over at %v", holder.name,
				fenced.Format(time.StampMicro), other.name, took.Format(time.StampMicro))
		}
		holder.stop()
		cs[holder.name] = campaign(t, api, ns, holder.name, rec)
	}
	t.Logf("a dead holder's data path stayed open %s after the kill; it had stopped %s before the standby took over",
		spread(open), spread(margins))
}

// The fence fails closed: the holder whose fence write fails stops being active and
// releases the Lease at its next renewal, the standby takes over at once, and the broken
// node takes the Lease again (even a free one) only once its fence can be written.
func unwritableFenceStepsDown(t *testing.T, api *rest.Config) {
	ns := electionNamespace(t, api)
	rec := &terms{}
	timing := FastTiming()
	cs := map[string]*candidate{"gw1": campaign(t, api, ns, "gw1", rec), "gw2": campaign(t, api, ns, "gw2", rec)}
	holder := activeOne(t, 5*time.Second, cs["gw1"], cs["gw2"])
	other := cs[map[string]string{"gw1": "gw2", "gw2": "gw1"}[holder.name]]

	holder.fence.breakWith(errors.New("injected: the fence cannot be written"))
	// Its next renewal (within RetryPeriod) writes the fence, fails and steps down.
	stepped := until(t, timing.RetryPeriod+400*time.Millisecond, holder.name+" steps down", func() bool { return !holder.el.Active() })
	// Released, not left to expire: the standby takes over at once.
	took := until(t, 2*time.Second, other.name+" takes over", other.el.Active)
	t.Logf("with its fence broken %s stepped down after %v; %s took over %v later", holder.name, stepped.Round(time.Millisecond),
		other.name, took.Round(time.Millisecond))

	// The broken node keeps trying its fence, and while it fails it takes no Lease, not
	// even one nobody holds.
	other.stop()
	tries := holder.fence.tried()
	for end := time.Now().Add(3 * timing.LeaseDuration); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if holder.el.Active() {
			t.Fatalf("%s took the gateway while its fence cannot be written", holder.name)
		}
	}
	if h := leaseHolderIn(t, api, ns); h == holder.name {
		t.Fatalf("%s holds the Lease while its fence cannot be written", holder.name)
	}
	if holder.fence.tried() == tries {
		t.Fatalf("%s did not try its fence again in %v", holder.name, 3*timing.LeaseDuration)
	}

	holder.fence.breakWith(nil)
	until(t, timing.RetryPeriod+time.Second, holder.name+" takes the free Lease once its fence works", holder.el.Active)
	if left := time.Until(holder.fence.term()); left <= 0 {
		t.Errorf("%s is active with a fence that ended %v ago", holder.name, -left)
	}
	requireNoOverlap(t, rec)
}

// leaseHolderIn is the holder of the gateway Lease in ns ("": none).
func leaseHolderIn(t *testing.T, api *rest.Config, ns string) string {
	t.Helper()
	kube, err := kubernetes.NewForConfig(api)
	if err != nil {
		t.Fatal(err)
	}
	l, err := kube.CoordinationV1().Leases(ns).Get(context.Background(), LeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return holderOf(l)
}

// askingPair starts two candidates that may hold through an API server that answers
// neither (campaignAsking), each asking the other.
func askingPair(t *testing.T, api *rest.Config) (*terms, []*candidate) {
	t.Helper()
	ns := electionNamespace(t, api)
	rec := &terms{}
	var cs []*candidate
	peers := func() []*candidate { return cs }
	cs = []*candidate{campaignAsking(t, api, ns, "gw1", rec, peers), campaignAsking(t, api, ns, "gw2", rec, peers)}
	return rec, cs
}

// requireNoOverlap fails the test when two candidates were ever active at once.
func requireNoOverlap(t *testing.T, rec *terms) {
	t.Helper()
	if o := rec.overlaps(time.Now()); len(o) > 0 {
		t.Fatalf("two candidates active at once:\n%s", strings.Join(o, "\n"))
	}
}
