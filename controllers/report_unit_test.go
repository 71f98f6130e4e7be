package controllers

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/memberprint"
)

// recordedTable is a member's table after the hub wrote one ServiceImport, answered
// at resourceVersion rv.
func recordedTable(rv string) *appliedTable {
	r := &ClusterSetReconciler{}
	t := r.appliedFor(members.Key{ClusterSet: types.NamespacedName{Namespace: "ns", Name: "cs"}, Cluster: "c1"})
	k := objKey{kind: "ServiceImport", namespace: "shop", name: "cart"}
	t.set(k, appliedEntry{hash: 1, fp: fingerprint(k, 0, 0, rv)})
	return t
}

// reportFor is the report of a member holding the ServiceImport at rv (none when rv is
// empty) and nothing else.
func reportFor(rv string) map[string]members.Print {
	out := map[string]members.Print{}
	for _, kind := range memberprint.ReportedKinds() {
		out[kind] = members.Print{}
	}
	if rv != "" {
		k := objKey{kind: "ServiceImport", namespace: "shop", name: "cart"}
		out["ServiceImport"] = members.Print{N: 1, Sum: fingerprint(k, 0, 0, rv)}
	}
	return out
}

func TestAReportThatDiffersAfterTheSettleIsSomeoneElsesChange(t *testing.T) {
	tab := recordedTable("7")
	at := time.Unix(1000, 0)
	tab.wrote(at)
	if tab.sawReport(reportFor("7")) {
		t.Fatal("a report equal to the record differs")
	}
	if !tab.trusted()["ServiceImport"] {
		t.Error("a kind whose report is the record is not trusted")
	}
	if d, _ := tab.settle(at.Add(time.Second)); d != 0 || tab.changes != 0 {
		t.Errorf("a report equal to the record: recheck %v, changes %d", d, tab.changes)
	}

	// The echo of the hub's write is not in the report yet: wait, do not pass in full.
	if !tab.sawReport(reportFor("6")) {
		t.Fatal("a report behind the record does not differ")
	}
	if tab.trusted()["ServiceImport"] {
		t.Error("a kind whose report differs is trusted")
	}
	if d, drift := tab.settle(at.Add(500 * time.Millisecond)); d != reportSettle-500*time.Millisecond || drift || tab.changes != 0 {
		t.Errorf("within the settle: recheck %v, changes %d", d, tab.changes)
	}
	// Still different after the settle: someone deleted it.
	tab.sawReport(reportFor(""))
	if d, drift := tab.settle(at.Add(reportSettle)); d != 0 || !drift || tab.changes != 1 {
		t.Errorf("after the settle: recheck %v, changes %d; want a full pass", d, tab.changes)
	}
	// The same report again (the full pass found nothing to do, or the reporter
	// stopped): not a second full pass.
	tab.sawReport(reportFor(""))
	if _, drift := tab.settle(at.Add(10 * time.Second)); drift || tab.changes != 1 {
		t.Errorf("the same report made another full pass: changes %d", tab.changes)
	}
	// A new report that differs is acted on again.
	tab.sawReport(reportFor("9"))
	if _, drift := tab.settle(at.Add(10 * time.Second)); !drift || tab.changes != 2 {
		t.Errorf("a new differing report: changes %d, want 2", tab.changes)
	}
}

func TestAMemberWithoutAReportIsLeftToTheResync(t *testing.T) {
	tab := recordedTable("7")
	tab.sawReport(nil)
	if d, drift := tab.settle(time.Unix(1e6, 0)); d != 0 || drift || tab.changes != 0 {
		t.Errorf("no report: recheck %v, changes %d", d, tab.changes)
	}
	if tab.trusted()["ServiceImport"] || tab.report.usable() {
		t.Error("a kind nobody reports is trusted")
	}
	if _, ok := tab.reportedPrint("ServiceImport"); ok {
		t.Error("a print read where none is reported")
	}
}

func TestReportOfNeedsEveryReportedKind(t *testing.T) {
	m := &straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{straitv1.LabelClusterSet: "ns.cs"}}}
	for _, kind := range memberprint.ReportedKinds()[1:] {
		m.Status.Prints = append(m.Status.Prints, straitv1.MemberPrint{ClusterSet: "ns.cs", Kind: kind, Sum: memberprint.FormatSum(0)})
	}
	if reportOf(m, "ns.cs") != nil {
		t.Error("a report missing a kind reads as a report")
	}
	m.Status.Prints = append(m.Status.Prints, straitv1.MemberPrint{ClusterSet: "ns.cs", Kind: memberprint.ReportedKinds()[0], Count: 3, Sum: memberprint.FormatSum(5)})
	if got := reportOf(m, "ns.cs"); got[memberprint.ReportedKinds()[0]] != (members.Print{N: 3, Sum: 5}) {
		t.Errorf("got %v", got)
	}
	if reportOf(m, "ns.other") != nil {
		t.Error("another ClusterSet's report read as this one's")
	}
}

// A pass that reads the status.prints its report was read from takes the report as
// read; other prints, or none since, are read anew.
func TestAReportIsReadAgainOnlyWhenItsPrintsChange(t *testing.T) {
	tab := recordedTable("7")
	m := &straitv1.Membership{}
	for kind, p := range reportFor("7") {
		m.Status.Prints = append(m.Status.Prints, straitv1.MemberPrint{ClusterSet: "ns.cs", Kind: kind,
			Count: int32(p.N), Sum: memberprint.FormatSum(p.Sum)})
	}
	if tab.readIn(m.Status.Prints) {
		t.Fatal("a report never read is taken as read")
	}
	if tab.sawReportIn(reportOf(m, "ns.cs"), m.Status.Prints) {
		t.Fatal("a report equal to the record differs")
	}
	if !tab.readIn(m.Status.Prints) {
		t.Error("the prints just read are read again")
	}
	changed := slices.Clone(m.Status.Prints)
	changed[0].Count++
	if tab.readIn(changed) {
		t.Error("other prints are taken as read")
	}
	m.Status.Prints[0].Count++ // the caller's slice: the table keeps its own copy
	if tab.readIn(m.Status.Prints) {
		t.Error("the table's copy of the prints changed with the caller's")
	}
	tab.sawReport(nil)
	if tab.readIn(changed) {
		t.Error("prints are taken as read after the member reported none")
	}
}
