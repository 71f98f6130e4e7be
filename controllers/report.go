package controllers

import (
	"context"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/memberprint"
	"github.com/straitnet/strait/plan"
)

// reportSettle is how long after its last write into a member the hub waits for the
// member's report (strait dns, memberprint) to show that write before it takes a report
// that differs from its record for someone else's change. A report runs behind the
// member by its informers' latency and a debounce of about 100 ms.
const reportSettle = 2 * time.Second

// memberReport is a member's last report of the kinds the hub does not watch
// (memberprint.Reported), for one ClusterSet.
type memberReport struct {
	// known: a report was read; prints has every reported kind, or the member
	// reports none for the ClusterSet (no strait dns runs there, or an old one).
	known  bool
	prints map[string]members.Print
	// read is the Membership's status.prints the report was read from: a pass that
	// finds the same takes the report as read (parsing every member's report at every
	// reconcile cost 0.4 MB at 1,000 members).
	read []straitv1.MemberPrint
	// actedOn: this report made a full pass already. A report that still differs
	// after the full pass put the member back is not acted on again until it changes:
	// a member whose reporter stopped would otherwise get a full pass at every
	// reconcile.
	actedOn bool
}

// reportOf is the report a Membership carries for the ClusterSet labelled label: nil
// unless it reports every reported kind.
func reportOf(m *straitv1.Membership, label string) map[string]members.Print {
	out := map[string]members.Print{}
	for _, kind := range memberprint.ReportedKinds() {
		p, ok := memberprint.FromStatus(m.Status.Prints, label, kind)
		if !ok {
			return nil
		}
		out[kind] = p
	}
	return out
}

// sawReport records the member's report (nil: it reports nothing usable) and says
// whether it differs from the record.
func (t *appliedTable) sawReport(prints map[string]members.Print) (differs bool) {
	return t.sawReportIn(prints, nil)
}

// sawReportIn is sawReport of a report read from a Membership's status.prints read.
func (t *appliedTable) sawReportIn(prints map[string]members.Print, read []straitv1.MemberPrint) (differs bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.report.known || !maps.Equal(t.report.prints, prints) {
		t.report = memberReport{known: true, prints: prints}
	}
	t.report.read = slices.Clone(read)
	return !t.reportMatches()
}

// readIn says whether the report was read from the status.prints read.
func (t *appliedTable) readIn(read []straitv1.MemberPrint) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.report.known && t.report.read != nil && slices.Equal(t.report.read, read)
}

// reportMatches says whether the member reports exactly the record, kind by kind;
// t.mu is held.
func (t *appliedTable) reportMatches() bool {
	if t.report.prints == nil {
		return false
	}
	for _, kind := range memberprint.ReportedKinds() {
		if !t.inSync(kind) {
			return false
		}
	}
	return true
}

// inSync says whether the member's report of kind is the record's; t.mu is held.
func (t *appliedTable) inSync(kind string) bool {
	p, ok := t.report.prints[kind]
	return ok && p == t.prints[kind]
}

// reportedPrint is the member's report of kind, ok false when there is none.
func (t *appliedTable) reportedPrint(kind string) (members.Print, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.report.prints[kind]
	return p, ok
}

// trusted are the reported kinds whose report is the record: the member holds exactly
// what the hub last wrote of them, so a pass need not read them (see memberWriter.trusts).
func (t *appliedTable) trusted() map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]bool{}
	for _, kind := range memberprint.ReportedKinds() {
		out[kind] = t.inSync(kind)
	}
	return out
}

// settle takes a report that differs from the record, reportSettle after the hub's
// last write into the member, for someone else's change (changedByOthers: the next
// pass is a full one). Before that it returns how long to wait: the report may not
// show the hub's own writes yet. A member without a report is left to the resync.
func (t *appliedTable) settle(now time.Time) (recheck time.Duration, drift bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.report.prints == nil || t.report.actedOn || t.reportMatches() {
		return 0, false
	}
	if wait := reportSettle - now.Sub(t.lastWrite); wait > 0 {
		return wait, false
	}
	t.report.actedOn = true
	t.changes++
	return 0, true
}

// usable says whether the report has a print of every reported kind.
func (r *memberReport) usable() bool { return r.prints != nil }

// wrote notes a write or delete into the member at now: its report shows it a little
// later.
func (t *appliedTable) wrote(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.After(t.lastWrite) {
		t.lastWrite = now
	}
}

// readReport reads the member's report from its Membership, as the informers hold it
// (not copied: it is only read), before the hub decides whether the member needs a
// pass. It reads into m: one Membership for every member of a reconcile, not 800 bytes
// of garbage each.
func (w *memberWriter) readReport(ctx context.Context, m *straitv1.Membership) {
	*m = straitv1.Membership{}
	if err := w.m.Reader.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, m,
		client.UnsafeDisableDeepCopy); err != nil {
		if client.IgnoreNotFound(err) == nil {
			w.table.sawReport(nil)
		}
		return
	}
	if w.table.readIn(m.Status.Prints) {
		return
	}
	w.table.sawReportIn(reportOf(m, plan.ClusterSetLabel(w.cs)), m.Status.Prints)
}

// print is the member's print of kind: reported by the member for the kinds the hub
// does not watch, kept by the informers for the others.
func (w *memberWriter) print(kind string) (members.Print, bool) {
	if memberprint.Reported(kind) {
		return w.table.reportedPrint(kind)
	}
	return w.m.Print(kind)
}

// reportChanged takes a member's Membership from its informer: a new report that
// differs from the record wakes the reconciler (which waits for it to settle).
func (r *ClusterSetReconciler) reportChanged(key members.Key, old client.Object, m *straitv1.Membership) bool {
	label := plan.ClusterSetLabel(key.ClusterSet)
	if m.Labels[straitv1.LabelClusterSet] != label {
		return false
	}
	now := reportOf(m, label)
	if was, ok := old.(*straitv1.Membership); ok && maps.Equal(reportOf(was, label), now) {
		return false
	}
	t := r.appliedFor(key)
	differs := t.sawReportIn(now, m.Status.Prints)
	r.showReporting(key, t)
	return differs
}

// checkReport reads the member's report before a pass over it (into m, see
// readReport), takes a settled difference for someone's change (settle), and shows
// both in the metrics. It returns when to look again, 0 for not before the usual.
func (r *ClusterSetReconciler) checkReport(ctx context.Context, w *memberWriter, cluster string, now time.Time, m *straitv1.Membership) time.Duration {
	w.readReport(ctx, m)
	recheck, drift := w.table.settle(now)
	key := members.Key{ClusterSet: w.cs, Cluster: cluster}
	w.table.showing(func(s *seriesShown) {
		if drift || !s.drift {
			// From 0 on, as a counter should.
			c := r.metrics.reportDrift.WithLabelValues(plan.ClusterSetLabel(key.ClusterSet), key.Cluster)
			if drift {
				c.Inc()
			}
			s.drift = true
		}
	})
	r.showReporting(key, w.table)
	return recheck
}

// showReporting sets strait_hub_member_reporting for the member when it changed.
func (r *ClusterSetReconciler) showReporting(key members.Key, t *appliedTable) {
	t.showing(func(s *seriesShown) {
		v := 0.0
		if t.report.usable() {
			v = 1
		}
		if s.reporting == nil || *s.reporting != v {
			r.metrics.reporting.WithLabelValues(plan.ClusterSetLabel(key.ClusterSet), key.Cluster).Set(v)
			s.reporting = &v
		}
	})
}

// seriesShown is what a member's report series show: they are set when that changes,
// not at every reconcile (two look-ups of a labelled series a member were 2.5 ms of a
// change's 30 at 1,000 members). The series go with the table (a member that left and
// was cleaned loses both in one reconcile, a deleted ClusterSet too), so a new table
// sets them again.
type seriesShown struct {
	drift     bool     // strait_hub_member_report_drift_total is there
	reporting *float64 // strait_hub_member_reporting's value
}

// showing calls f with the series shown, under the table's lock: the informers' handler
// and a pass may show the member's report at once.
func (t *appliedTable) showing(f func(*seriesShown)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f(&t.shown)
}
