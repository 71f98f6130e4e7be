package controllers

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// adoptable says whether a member's object cur, which the hub has no record of writing,
// is what the hub would write now (the plan's object want, whose content hashes to
// hash), so that it is recorded as written instead of written again. That is the case
// after a hub starts over members already in place: a restart, a new leader, an upgrade.
// Without it, the first reconcile of a new hub rewrites every object of every member
// (3.2 million at 64 members × 10,000 exports, docs/performance.md "Cold start").
//
// It is when the object carries the digest of want's content (the annotation the hub
// writes with every object, AnnotationDigest), nobody but the hub owns fields of it
// outside its status (the member informers keep only other managers' entries,
// members.KeepOthersManagers: someone's edit, a label added by hand, shows there), and
// the status the hub writes in a second request, a ServiceImport's, is want's: a hub
// stopped between a ServiceImport's two writes leaves the new digest beside the old
// status.
func adoptable(cur, want client.Object, hash uint64) bool {
	if !carriesDigest(cur, hash) {
		return false
	}
	if w, ok := want.(*mcsv1.ServiceImport); ok {
		c, ok := cur.(*mcsv1.ServiceImport)
		return ok && sameImportStatus(c.Status, w.Status)
	}
	return true
}

// carriesDigest says whether the member's object o carries the digest of content that
// hashes to hash, and nobody but the hub owns fields of it outside its status (the
// member informers keep only other managers' entries, members.KeepOthersManagers).
func carriesDigest(o client.Object, hash uint64) bool {
	return o.GetAnnotations()[straitv1.AnnotationDigest] == digestOf(hash) && len(o.GetManagedFields()) == 0
}

// sameImportStatus compares a ServiceImport's status as held with the plan's: the same
// clusters, and the same conditions but for the times the hub stamps when it writes.
func sameImportStatus(held, want mcsv1.ServiceImportStatus) bool {
	clusters := func(s mcsv1.ServiceImportStatus) []string {
		var out []string
		for _, c := range s.Clusters {
			out = append(out, c.Cluster)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(clusters(held), clusters(want)) || len(held.Conditions) != len(want.Conditions) {
		return false
	}
	for _, w := range want.Conditions {
		i := slices.IndexFunc(held.Conditions, func(h metav1.Condition) bool { return h.Type == w.Type })
		if i < 0 {
			return false
		}
		h := held.Conditions[i]
		if h.Status != w.Status || h.Reason != w.Reason || h.Message != w.Message || h.ObservedGeneration != w.ObservedGeneration {
			return false
		}
	}
	return true
}
