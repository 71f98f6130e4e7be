package memberprint

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "s", ResourceVersion: "5", Generation: 1}}
	a := Of("Service", svc)
	svc.ResourceVersion = "6"
	if Of("Service", svc) == a {
		t.Error("a Service's fingerprint must change with its resourceVersion")
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
