package controllers

import (
	"bytes"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/memberprint"
)

// TestTheRecordOfADigestedKindSumsWhatTheMemberPrints: the record keeps a digested
// kind's objects as their hashes, and its print of the kind is still the sum the
// member reports of the objects it holds: those the hub wrote alone, one someone else
// owns a field of, and one whose write is on its way (which the member cannot hold).
func TestTheRecordOfADigestedKindSumsWhatTheMemberPrints(t *testing.T) {
	t.Parallel()
	table := (&ClusterSetReconciler{}).appliedFor(members.Key{Cluster: "c1"})
	imp := func(name string, hash uint64, managers ...string) *mcsv1.ServiceImport {
		o := &mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: name, ResourceVersion: "7",
			Annotations: map[string]string{straitv1.AnnotationDigest: digestOf(hash)}}}
		for _, m := range append([]string{straitv1.FieldManager}, managers...) {
			o.ManagedFields = append(o.ManagedFields, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationApply})
		}
		return o
	}
	var member memberprint.Print
	for i, o := range []*mcsv1.ServiceImport{imp("a", 1), imp("b", 2), imp("c", 3, "kubectl-edit")} {
		k := keyOf("ServiceImport", o)
		table.set(k, entryOf(k.kind, o, o.ResourceVersion, uint64(i+1)))
		member.Add(objectPrint(k.kind, o))
		if e, ok := table.get(k); !ok || !e.holds(k.kind, o) || e.hash != uint64(i+1) {
			t.Errorf("%s: the record %+v (%v) does not hold the member's object", k.name, e, ok)
		}
	}
	if got := table.printOf("ServiceImport"); got != member {
		t.Errorf("the record prints %+v, the member %+v", got, member)
	}
	if d := table.digested["ServiceImport"]; d.hashes.Len() != 3 || len(d.odd) != 1 {
		t.Errorf("want 3 hashes and only kubectl-edit's object odd, got %d and %d", d.hashes.Len(), len(d.odd))
	}
	// A write on its way: no fingerprint the member can hold until it returns; undone,
	// the record is as it was.
	k := keyOf("ServiceImport", imp("a", 1))
	undo := table.expect(k, 9)
	if table.printOf("ServiceImport") == member {
		t.Error("a write on its way must make the record's print differ")
	}
	if e, _ := table.get(k); e.holds(k.kind, imp("a", 9)) {
		t.Error("an object the write has not answered must not hold")
	}
	undo()
	if got := table.printOf("ServiceImport"); got != member {
		t.Errorf("undone, the record prints %+v, the member %+v", got, member)
	}
	table.drop(keyOf("ServiceImport", imp("c", 3)))
	member.Remove(objectPrint("ServiceImport", imp("c", 3, "kubectl-edit")))
	if got := table.printOf("ServiceImport"); got != member || len(table.digested["ServiceImport"].odd) != 0 {
		t.Errorf("dropped, the record prints %+v, the member %+v", got, member)
	}
	if inv := table.inventory(); inv["ServiceImport"] != 2 {
		t.Errorf("inventory %v, want 2 ServiceImports", inv)
	}
}

// TestAnObjectsDigestIsTheSameInEveryMember: the digest leaves out the target-cluster
// annotation, the member's own name, so that the members' records share it; any other
// difference changes it.
func TestAnObjectsDigestIsTheSameInEveryMember(t *testing.T) {
	obj := func(target, port string) []byte {
		data, err := json.Marshal(&corev1.Service{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Annotations: map[string]string{
				straitv1.AnnotationDerivedFrom: "web", straitv1.AnnotationTargetCluster: target, "z": port}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	if hashOf(obj("c1", "80")) != hashOf(obj("cluster-two", "80")) {
		t.Error("one object's digest differs between two members")
	}
	if hashOf(obj("c1", "80")) == hashOf(obj("c1", "81")) {
		t.Error("two contents of one member have one digest")
	}
	if !bytes.Contains(obj("c1", "80"), []byte(targetKey+"c1\"")) {
		t.Error("the object's JSON does not hold the target-cluster annotation as hashOf looks for it")
	}
}
