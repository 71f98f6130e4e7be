package controllers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/memberprint"
	"github.com/straitnet/strait/plan"
)

// check is the resync's pass over a member whose inputs are those of its last pass,
// over the same healthy connection, with no foreign change seen since (see
// appliedTable.resyncDue). The plan then wants exactly what the hub last wrote, so
// instead of building every object again it compares what the member holds with the
// hub's record: the objects carrying the ClusterSet's labels must be exactly those the
// hub wrote, each at the resourceVersion the member answered the hub's write with (or,
// for a Peer whose status its agent writes, the generation, labels and annotations).
// Anyone's change to an object gives it another resourceVersion; stripping its labels
// takes it out; an object someone else labelled adds one. The member's side is the
// print its informers keep from their events (memberPrints, members.Prints), so the
// check lists nothing. ok false means the member differs, or its informers have not
// caught up yet, and needs a full pass.
//
// The print runs behind the member: a change it has not been handed yet is on its way
// to the informer, whose event also reaches memberChanged, and it is in the print the
// next resync compares. It can only differ from the record in a way that makes a full
// pass, never hide a change it has been handed (but for a 64-bit collision).
//
// The IPsec key (Secrets are not watched) is written as a full pass writes it, and the
// conditions of the member's ServiceExports are checked and written where they differ.
func (w *memberWriter) check(ctx context.Context, p *plan.Plan, cluster string, psk pskData, res *memberResult) (ok bool, err error) {
	if psk.err != nil {
		return false, nil // the full pass reports it and keeps the member's key
	}
	if err := w.checkOwner(ctx); err != nil {
		return false, err
	}
	for _, pk := range prunable() {
		// An object the hub wrote gone, stripped of its labels or changed, or one more
		// labelled, changes the count or the sum.
		if got, ok := w.print(pk.kind); !ok || got != w.table.printOf(pk.kind) {
			return false, nil
		}
	}
	if s := p.IPsecPSK(cluster); s != nil {
		objs := withPSK([]client.Object{s}, psk)
		n, err := w.apply(ctx, keyOf("Secret", s), objs[0])
		res.applied += n
		if err != nil {
			return false, err
		}
	}
	if err := summarize(w.exportConditions(ctx, p.ServiceExportConditions(cluster))); err != nil {
		return false, err
	}
	res.inventory = w.table.inventory()
	return true, nil
}

// print and unprint count an entry in or out of its kind's print; t.mu is held.
func (t *appliedTable) print(k objKey, e appliedEntry) {
	p := t.prints[k.kind]
	p.N++
	p.Sum += e.fp
	t.prints[k.kind] = p
}

func (t *appliedTable) unprint(k objKey, e appliedEntry) {
	p := t.prints[k.kind]
	p.N--
	p.Sum -= e.fp
	t.prints[k.kind] = p
}

// printOf is the print of the recorded objects of a kind.
func (t *appliedTable) printOf(kind string) members.Print {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.prints[kind]
}

// memberPrints is the fingerprint a member connection's informers keep their prints
// with (members.Options.Prints): an object counts when it is of a kind the hub writes,
// in the namespace the hub writes that kind in, and carries the ClusterSet's labels —
// what prune lists as the hub's. The print of a kind then equals the record's
// (appliedTable.prints) when the member holds exactly the recorded objects, each still
// what the hub wrote (appliedEntry.holds; a 64-bit sum can only collide by chance).
func memberPrints(key members.Key) members.PrintFunc {
	label := plan.ClusterSetLabel(key.ClusterSet)
	namespaces := map[string]string{}
	for _, pk := range prunable() {
		namespaces[pk.kind] = pk.namespace
	}
	return func(kind string, o client.Object) (uint64, bool) {
		ns, ok := namespaces[kind]
		if !ok || ns != "" && o.GetNamespace() != ns {
			return 0, false
		}
		l := o.GetLabels()
		if l[straitv1.LabelManagedBy] != straitv1.ManagedByHub || l[straitv1.LabelClusterSet] != label {
			return 0, false
		}
		return objectPrint(kind, o), true
	}
}

// objectPrint is the fingerprint of an object of kind as a member holds it, the one the
// hub's record keeps for its write when the object is still what the hub wrote.
func objectPrint(kind string, o client.Object) uint64 { return memberprint.Of(kind, o) }

// fingerprint hashes an object's identity and version (memberprint.Fingerprint).
func fingerprint(k objKey, gen int64, meta uint64, rv string) uint64 {
	return memberprint.Fingerprint(k.kind, k.namespace, k.name, gen, meta, rv)
}

// mix64 spreads a hash's bits (memberprint.Mix64).
func mix64(x uint64) uint64 { return memberprint.Mix64(x) }

// resyncDue says whether the last pass would still hold but for its age: the same
// inputs over the same healthy connection, and no foreign change seen since. Then the
// resync checks the member (check) rather than passing over it in full.
func (t *appliedTable) resyncDue(s passState) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.unchangedSince(s) && t.pass.digest == s.digest
}
