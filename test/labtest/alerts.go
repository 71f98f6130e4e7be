package labtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/monitoring"
	"github.com/straitnet/strait/lab/topology"
)

// alertPoll is how often an AlertWatch asks its Prometheus for the active alerts;
// maxInFlight bounds the polls waiting for an answer at once.
const (
	alertPoll   = 250 * time.Millisecond
	maxInFlight = 8
)

// AlertBound is the longest a lab's alert may take to fire once its fault shows in a
// metric (detect after the fault): Prometheus scrapes the change within an interval,
// the next evaluation makes the alert pending, the rule's `for:` (shortened by
// monitoring.LabScale, at least a second when set) passes, the evaluation after it
// fires it, and the watch sees it within its poll. One interval more absorbs a scrape
// or an evaluation this shared two-core machine runs late.
func AlertBound(detect, ruleFor time.Duration) time.Duration {
	shortened := ruleFor / monitoring.LabScale
	if ruleFor > 0 {
		shortened = max(shortened, time.Second)
	}
	return detect + shortened + 4*lab.PrometheusInterval + alertPoll
}

// ResolveBound is the longest a lab's firing alert may take to go once its fault is
// undone and the metric shows it (detect after the undoing): a scrape, an evaluation,
// the poll, and one interval more as in AlertBound.
func ResolveBound(detect time.Duration) time.Duration {
	return detect + 3*lab.PrometheusInterval + alertPoll
}

// DiscoveryDetect bounds the time from a pod's start to its first scrape: Prometheus's
// discovery passes a change on after a back-off of up to 5 s (100 ms after a quiet
// spell), and its scrape manager takes target changes every second in the lab
// (--scrape.discovery-reload-interval, 5 s by default).
const DiscoveryDetect = 5*time.Second + time.Second

// AlertWatch polls one cluster's Prometheus for its active alerts from its start until
// the test ends, and keeps every alert it saw: when it first saw it pending, firing,
// and gone again.
type AlertWatch struct {
	cluster string
	api     promv1.API

	mu   sync.Mutex
	seen map[string]*SeenAlert
	last error
	// blind is the longest time between the starts of two polls in a row that answered
	// (the first after the watch's first good poll), blindFrom when it began: what the
	// watch could not have seen.
	blind     time.Duration
	blindFrom time.Time
	// lastSent is when the last good poll was sent (zero before the first).
	lastSent time.Time
}

// NeverGap is the longest time between two good polls in a row over which Never still
// vouches for an alert's absence: an alert stays active at least an evaluation, and one
// poll interval more lets a poll's own time pass.
const NeverGap = lab.PrometheusInterval + alertPoll

// SeenAlert is one alert (a rule's name with one set of labels) as a watch saw it.
type SeenAlert struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	// Pending, Firing: when the watch first saw it in that state; Gone: when it first
	// saw it inactive after it had been firing (zero while it fires).
	Pending, Firing, Gone time.Time
}

func (a *SeenAlert) String() string {
	return fmt.Sprintf("%s%v (pending %s, firing %s, gone %s)", a.Name, a.Labels,
		a.Pending.Format("15:04:05.000"), a.Firing.Format("15:04:05.000"), a.Gone.Format("15:04:05.000"))
}

// Prometheus is the API of cluster's Prometheus (the lab runs with monitoring).
func (e *Env) Prometheus(t testing.TB, cluster string) promv1.API {
	t.Helper()
	api, err := lab.PrometheusAPI(e.Topo, cluster)
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// WatchAlerts starts watching cluster's Prometheus (the lab runs with monitoring) until
// t ends.
func (e *Env) WatchAlerts(t testing.TB, cluster string) *AlertWatch {
	t.Helper()
	return watchAlerts(t, cluster, e.Prometheus(t, cluster))
}

// watchAlerts starts an AlertWatch of api, cluster's Prometheus, until t ends, and
// returns once its first poll answered.
func watchAlerts(t testing.TB, cluster string, api promv1.API) *AlertWatch {
	t.Helper()
	w := &AlertWatch{cluster: cluster, api: api, seen: map[string]*SeenAlert{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// A poll every alertPoll, each in its own goroutine (at most maxInFlight at once): a
	// slow answer on a loaded machine does not hold back the next poll, so the gaps
	// Never bounds are the answers', not the answers' latency summed.
	go func() {
		defer close(done)
		var polls sync.WaitGroup
		defer polls.Wait()
		inFlight := make(chan struct{}, maxInFlight)
		tick := time.NewTicker(alertPoll)
		defer tick.Stop()
		for ctx.Err() == nil {
			select {
			case inFlight <- struct{}{}:
				polls.Add(1)
				go func() {
					defer polls.Done()
					defer func() { <-inFlight }()
					w.poll(ctx)
				}()
			default:
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	// The first poll, so that what already fires is not taken for what a fault fires.
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		polled, last := w.lastSent, w.last
		w.mu.Unlock()
		if !polled.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s's Prometheus does not answer its alerts API: %v", cluster, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return w
}

func (w *AlertWatch) poll(watch context.Context) {
	ctx, cancel := context.WithTimeout(watch, 2*time.Second)
	defer cancel()
	sent := time.Now()
	res, err := w.api.Alerts(ctx)
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if sent.Before(w.lastSent) {
		// A later poll answered first: this answer is older than what the watch holds.
		return
	}
	if err != nil {
		if watch.Err() == nil {
			w.last = err
		}
		return
	}
	w.noteGap(sent)
	w.last = nil
	active := map[string]bool{}
	for _, a := range res.Alerts {
		labels := map[string]string{}
		for k, v := range a.Labels {
			labels[string(k)] = string(v)
		}
		key := a.Labels.String()
		active[key] = true
		s := w.seen[key]
		if s == nil || !s.Gone.IsZero() {
			s = &SeenAlert{Name: labels["alertname"], Labels: labels}
			w.seen[key] = s
		}
		s.Annotations = map[string]string{}
		for k, v := range a.Annotations {
			s.Annotations[string(k)] = string(v)
		}
		if s.Pending.IsZero() {
			s.Pending = now
		}
		if a.State == promv1.AlertStateFiring && s.Firing.IsZero() {
			s.Firing = now
		}
	}
	for key, s := range w.seen {
		if !active[key] && s.Gone.IsZero() {
			s.Gone = now
		}
	}
}

// find is the alert of that name whose labels include match that the watch saw go
// pending last, or nil.
func (w *AlertWatch) find(name string, match map[string]string) *SeenAlert {
	w.mu.Lock()
	defer w.mu.Unlock()
	var found *SeenAlert
	for _, s := range w.seen {
		if s.Name != name {
			continue
		}
		ok := true
		for k, v := range match {
			ok = ok && s.Labels[k] == v
		}
		if ok && (found == nil || s.Pending.After(found.Pending)) {
			c := *s
			found = &c
		}
	}
	return found
}

// Fired waits until the alert of that name with labels including match fires, and
// fails t unless it fired within bound of from. The alert must say what it is about: a
// summary and a description naming every value of match and the cluster it fires in.
// It returns when the alert fired, from from.
func (w *AlertWatch) Fired(t testing.TB, name string, match map[string]string, from time.Time, bound time.Duration) time.Duration {
	t.Helper()
	deadline := from.Add(bound + 10*time.Second) // past the bound: to say how late it was
	for {
		a := w.find(name, match)
		if a != nil && a.Pending.Before(from) && a.Gone.IsZero() {
			t.Fatalf("%s: %s was active before the fault: %s", w.cluster, name, a)
		}
		if a != nil && !a.Pending.Before(from) && !a.Firing.IsZero() {
			took := a.Firing.Sub(from)
			t.Logf("%s: %s fired %s after the fault (bound %s): %s", w.cluster, name, took.Round(10*time.Millisecond), bound, a.Annotations["summary"])
			if took > bound {
				t.Errorf("%s: %s%v fired %s after the fault; the bound is %s", w.cluster, name, match, took.Round(10*time.Millisecond), bound)
			}
			w.checkNames(t, a, match)
			return took
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s%v did not fire within %s of the fault (bound %s); the watch saw: %s", w.cluster, name, match,
				time.Since(from).Round(time.Second), bound, w.describe())
		}
		time.Sleep(alertPoll / 2)
	}
}

// checkNames fails t unless the alert's summary is set and its description names every
// value of match and, in a member, the member (its Prometheus's external label): the
// hub's alerts name the member or ClusterSet they are about instead.
func (w *AlertWatch) checkNames(t testing.TB, a *SeenAlert, match map[string]string) {
	t.Helper()
	if a.Annotations["summary"] == "" || a.Annotations["runbook_url"] == "" {
		t.Errorf("%s: %s has no summary or runbook_url: %v", w.cluster, a.Name, a.Annotations)
	}
	desc := a.Annotations["description"]
	var names []string
	if w.cluster != HubCluster {
		names = append(names, w.cluster)
	}
	for _, v := range match {
		names = append(names, v)
	}
	for _, n := range names {
		if !strings.Contains(desc, n) {
			t.Errorf("%s: %s's description does not name %q: %q", w.cluster, a.Name, n, desc)
		}
	}
}

// Resolved waits until the alert Fired found is gone, and fails t unless it went
// within bound of from (the fault undone).
func (w *AlertWatch) Resolved(t testing.TB, name string, match map[string]string, from time.Time, bound time.Duration) {
	t.Helper()
	deadline := from.Add(bound + 10*time.Second)
	for {
		a := w.find(name, match)
		if a == nil {
			t.Fatalf("%s: %s%v never fired; the watch saw: %s", w.cluster, name, match, w.describe())
			return
		}
		if !a.Gone.IsZero() {
			took := a.Gone.Sub(from)
			t.Logf("%s: %s resolved %s after the fault was undone (bound %s)", w.cluster, name, took.Round(10*time.Millisecond), bound)
			if took > bound {
				t.Errorf("%s: %s%v resolved %s after the fault was undone; the bound is %s", w.cluster, name, match, took.Round(10*time.Millisecond), bound)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s%v still active %s after the fault was undone (bound %s)", w.cluster, name, match, time.Since(from).Round(time.Second), bound)
		}
		time.Sleep(alertPoll / 2)
	}
}

// Quiet waits until none of the named alerts is active (one a test before left going,
// such as a failover's, which stays for its window), so that a fault's alert is told
// from it; it fails t after timeout.
func (w *AlertWatch) Quiet(t testing.TB, timeout time.Duration, names ...string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var active []string
		w.mu.Lock()
		for _, s := range w.seen {
			if slices.Contains(names, s.Name) && s.Gone.IsZero() {
				active = append(active, s.String())
			}
		}
		w.mu.Unlock()
		if len(active) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still active after %s: %s", w.cluster, timeout, strings.Join(active, "; "))
		}
		time.Sleep(alertPoll)
	}
}

// noteGap records a good poll sent at sent: the time since the last good poll's start,
// if it is the longest yet. Called with mu held.
func (w *AlertWatch) noteGap(sent time.Time) {
	if !w.lastSent.IsZero() {
		if gap := sent.Sub(w.lastSent); gap > w.blind {
			w.blind, w.blindFrom = gap, w.lastSent
		}
	}
	w.lastSent = sent
}

// Never fails t if the watch saw the alert of that name pending or firing, or if it
// cannot vouch for the whole time since it started: a poll that failed last, or two
// good polls in a row (the time since the last good one included) further apart than
// NeverGap, over which an alert could have come and gone unseen.
func (w *AlertWatch) Never(t testing.TB, name string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last != nil {
		t.Errorf("%s's Prometheus: %v", w.cluster, w.last)
	}
	blind, from := w.blind, w.blindFrom
	if since := time.Since(w.lastSent); since > blind {
		blind, from = since, w.lastSent
	}
	if blind > NeverGap {
		t.Errorf("%s: the alerts watch went %s without a good poll from %s (at most %s between two): it cannot say %s never went active",
			w.cluster, blind.Round(time.Millisecond), from.Format("15:04:05.000"), NeverGap, name)
	}
	for _, s := range w.seen {
		if s.Name == name {
			t.Errorf("%s: %s went active: %s", w.cluster, name, s)
		}
	}
}

func (w *AlertWatch) describe() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var all []string
	for _, s := range w.seen {
		all = append(all, s.String())
	}
	slices.Sort(all)
	if w.last != nil {
		all = append(all, "last poll: "+w.last.Error())
	}
	if len(all) == 0 {
		return "no alert"
	}
	return strings.Join(all, "; ")
}

// HubCluster is the hub's name in the lab, for WatchAlerts on the hub's Prometheus.
const HubCluster = topology.HubName
