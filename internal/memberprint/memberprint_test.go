package memberprint

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

func TestFromStatusReadsTheClusterSetsKind(t *testing.T) {
	st := []straitv1.MemberPrint{
		{ClusterSet: "ns.a", Kind: "Service", Count: 2, Sum: FormatSum(0xfedcba9876543210)},
		{ClusterSet: "ns.b", Kind: "Service", Count: 5, Sum: FormatSum(7)},
		{ClusterSet: "ns.a", Kind: "EndpointSlice", Count: 1, Sum: "not-a-sum"},
	}
	if p, ok := FromStatus(st, "ns.a", "Service"); !ok || p != (Print{N: 2, Sum: 0xfedcba9876543210}) {
		t.Errorf("ns.a Service: got %+v, %v", p, ok)
	}
	if _, ok := FromStatus(st, "ns.a", "ServiceImport"); ok {
		t.Error("a kind not reported must not read as a print")
	}
	if _, ok := FromStatus(st, "ns.a", "EndpointSlice"); ok {
		t.Error("an unreadable sum must not read as a print")
	}
}

func TestParseSumRefusesWhatFormatSumDoesNotWrite(t *testing.T) {
	for _, s := range []string{"", "12", "000000000000000g", "0x00000000000000", "00000000000000000"} {
		if _, err := ParseSum(s); err == nil {
			t.Errorf("ParseSum(%q): want an error", s)
		}
	}
	if v, err := ParseSum(FormatSum(1)); err != nil || v != 1 {
		t.Errorf("round trip: %d, %v", v, err)
	}
}

func TestFingerprintFollowsTheVersionTheHubKeeps(t *testing.T) {
	gi := &straitv1.GlobalIngress{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "s", ResourceVersion: "5", Generation: 1}}
	a := Of("GlobalIngress", gi)
	gi.ResourceVersion = "6"
	if Of("GlobalIngress", gi) == a {
		t.Error("a GlobalIngress's fingerprint must change with its resourceVersion")
	}
	m := &straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "m", ResourceVersion: "5", Generation: 1}}
	b := Of("Membership", m)
	m.ResourceVersion = "6" // a daemon wrote the status
	if Of("Membership", m) != b {
		t.Error("a Membership's fingerprint must not change with a status write")
	}
	m.Labels = map[string]string{"x": "y"}
	if Of("Membership", m) == b {
		t.Error("a Membership's fingerprint must change with its labels")
	}
}

func TestCountedIsTheHubsObjectsOnly(t *testing.T) {
	o := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		straitv1.LabelManagedBy: straitv1.ManagedByHub, straitv1.LabelClusterSet: "ns.a"}}}
	if cs, ok := Counted(o); !ok || cs != "ns.a" {
		t.Errorf("got %q, %v", cs, ok)
	}
	o.Labels[straitv1.LabelManagedBy] = "someone"
	if _, ok := Counted(o); ok {
		t.Error("someone else's object must not count")
	}
}

// TestADigestedPrintIsWhatTheHubWrote: a ServiceImport's print follows the digest the
// hub wrote and who else owns its fields, not its resourceVersion. strait dns's writer
// setting spec.ips, or the hub's status write, leaves it as it was; another digest, or
// a new hand in the object (kubectl edit), changes it.
func TestADigestedPrintIsWhatTheHubWrote(t *testing.T) {
	entry := func(manager string, op metav1.ManagedFieldsOperationType, sub string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: sub}
	}
	si := &mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "web", ResourceVersion: "5",
		Annotations:   map[string]string{straitv1.AnnotationDigest: "0123456789abcdef"},
		ManagedFields: []metav1.ManagedFieldsEntry{entry(straitv1.FieldManager, metav1.ManagedFieldsOperationApply, "")}}}
	hub := Of("ServiceImport", si)
	si.ResourceVersion = "6"
	si.ManagedFields = append(si.ManagedFields, entry(straitv1.FieldManagerClusterSetIP, metav1.ManagedFieldsOperationApply, ""),
		entry(straitv1.FieldManager, metav1.ManagedFieldsOperationApply, "status"), entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "status"))
	if Of("ServiceImport", si) != hub {
		t.Error("spec.ips by strait dns, or a status write, must leave the print as the hub wrote it")
	}
	if Of("Service", si) == hub {
		t.Error("the kind is part of the print")
	}
	edited := si.DeepCopy()
	edited.ManagedFields = append(edited.ManagedFields, entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, ""))
	if Of("ServiceImport", edited) == hub {
		t.Error("someone else owning a field of the spec must change the print")
	}
	again := edited.DeepCopy()
	again.ManagedFields = append(again.ManagedFields[:len(again.ManagedFields)-1], entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, ""))
	slices.Reverse(again.ManagedFields)
	if Of("ServiceImport", again) != Of("ServiceImport", edited) {
		t.Error("the order of the managed fields must not matter")
	}
	si.Annotations[straitv1.AnnotationDigest] = "fedcba9876543210"
	if Of("ServiceImport", si) == hub {
		t.Error("another digest must change the print")
	}
}

// TestTheHubComputesADigestedPrintFromNumbers: what the hub keeps of an object it
// wrote, the key of its name and the digest, gives the print the member computes from
// the object, as long as nobody else owns a field; a digest that is not one the hub
// formats (someone else's annotation, or none) counts as another.
func TestTheHubComputesADigestedPrintFromNumbers(t *testing.T) {
	const digest = 0x0123456789abcdef
	si := &mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "web",
		Annotations:   map[string]string{straitv1.AnnotationDigest: "0123456789abcdef"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: straitv1.FieldManager, Operation: metav1.ManagedFieldsOperationApply}}}}
	if got, want := Of("ServiceImport", si), DigestPrint("ServiceImport", NameKey("n", "web"), digest, NoOthers); got != want {
		t.Errorf("the member's print %x, the hub's from its record %x", got, want)
	}
	if got := ParseDigest("0123456789abcdef"); got != digest {
		t.Errorf("ParseDigest gave %x", got)
	}
	for _, s := range []string{"", "123", "0123456789abcdeg", "00123456789abcdef"} {
		if ParseDigest(s) == digest || ParseDigest(s) == ParseDigest(s+"x") {
			t.Errorf("ParseDigest(%q) must count as a digest of its own", s)
		}
	}
	if DigestPrint("ServiceImport", NameKey("n", "web"), digest, NoOthers) == DigestPrint("ServiceImport", NameKey("n", "web2"), digest, NoOthers) {
		t.Error("the name is part of the print")
	}
}
