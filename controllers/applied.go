package controllers

import (
	"bytes"
	"hash/fnv"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/keytable"
	"github.com/straitnet/strait/internal/memberprint"
	"github.com/straitnet/strait/internal/sharedtable"
	"github.com/straitnet/strait/plan"
)

// objKey names an object the hub writes in a member.
type objKey struct{ kind, namespace, name string }

func keyOf(kind string, o client.Object) objKey {
	return objKey{kind: kind, namespace: o.GetNamespace(), name: o.GetName()}
}

// appliedEntry is what the hub last wrote to an object and what the member answered
// with, kept as two numbers: 16 bytes an object, for the millions a large hub writes.
// While the member still holds what it answered and the plan still wants the same
// content, the write is skipped: an unchanged clusterset costs no writes, and anybody
// else's change (a new resourceVersion) is overwritten at once.
type appliedEntry struct {
	hash uint64 // of the object as the plan wants it, status included
	// fp is the object's fingerprint as the member answered the write (objectPrint):
	// of its resourceVersion; for kinds whose status others write (statusByOthers), of
	// its generation, labels and annotations; for the digested kinds, which Strait's own
	// writers in the member touch too (memberprint.Digested), of the digest it carries
	// and who else owns its fields. Those, not the resourceVersion, tell whether the
	// hub's part is still in place.
	fp uint64
}

// statusByOthers says whether others write the status subresource of a kind the hub
// writes (memberprint.StatusByOthers).
func statusByOthers(kind string) bool { return memberprint.StatusByOthers(kind) }

// entryOf records the member's answer o (at resourceVersion rv) to a write of an
// object of kind whose desired content hashes to hash. An object of a digested kind
// (memberprint.Digested) is recorded by the digest it carries and who else owns its
// fields, whatever its resourceVersion: a status write after it, or strait dns's
// clusterset IPs, do not make the member's print differ from the record.
func entryOf(kind string, o client.Object, rv string, hash uint64) appliedEntry {
	if memberprint.Digested(kind) {
		return appliedEntry{hash: hash, fp: objectPrint(kind, o)}
	}
	var gen int64
	var meta uint64
	if statusByOthers(kind) {
		gen, meta = o.GetGeneration(), metaHash(o)
	}
	return appliedEntry{hash: hash, fp: fingerprint(keyOf(kind, o), gen, meta, rv)}
}

// holds says whether the member's object o (of kind) still is what the hub wrote: the
// same resourceVersion, or, where others write the status, the same generation (the
// spec) and the same labels and annotations (but for a 64-bit collision).
func (e appliedEntry) holds(kind string, o client.Object) bool { return objectPrint(kind, o) == e.fp }

// metaHash hashes an object's labels and annotations (memberprint.MetaHash).
func metaHash(o client.Object) uint64 { return memberprint.MetaHash(o) }

// appliedTable is one member connection's record of the hub's writes.
type appliedTable struct {
	mu sync.Mutex
	// entries are by kind, then by the hash of the object's namespace and name
	// (nameHash), in a keytable of 24 bytes an object: a table of strings took 300
	// bytes an object, 1.5 GiB at 255 members × 10,000 exports, and a Go map of the
	// same numbers 84. Two names of one kind in one member that hash alike would share
	// an entry, a 64-bit collision of the kind the prints already allow. The digested
	// kinds, nearly all of the objects, are in digested instead, shared between members.
	entries map[string]*keytable.Table[appliedEntry]
	// digested are the entries of the digested kinds (memberprint.Digested), by kind,
	// their nodes shared through pool with every other member's (sealed at the end of
	// each pass).
	digested   map[string]*digestedTable
	pool       *sharedtable.Pool
	namespaces map[string]bool // namespaces known to exist in the member
	pass       memberPass
	// changes counts changes to the hub's objects in the member that were not the hub's
	// own writes; a pass that started before the latest one does not count as current.
	changes uint64
	// prints are, per kind, the count and the sum of the entries' fingerprints: the
	// resync's check compares a member's whole list of a kind with them in one pass.
	prints map[string]members.Print
	// report is the member's own print of the kinds the hub does not watch, and
	// lastWrite when the hub last wrote or deleted something there (see settle).
	report    memberReport
	lastWrite time.Time
	shown     seriesShown
}

// memberPass is the last complete, successful pass over a member: every object applied
// (or found in place) and the leftovers pruned.
type memberPass struct {
	done bool
	// digest of the plan's inputs for the member (plan.MemberDigest and the PSK).
	digest uint64
	// member is the connection it went through, and since when that connection was
	// healthy: a new connection or a reconnect means the member may have changed while
	// the hub was not watching.
	member *members.Member
	since  time.Time
	at     time.Time // when the pass started
	// changes is appliedTable.changes when the pass started.
	changes   uint64
	inventory map[string]int32
	// groups are the plan's group digests the pass applied (plan.Groups: 8 bytes a
	// group, the keys shared by every member passed with that plan), so that the next
	// pass over the same connection rebuilds only the groups that changed.
	groups plan.Groups
}

// passState is what decides whether a member needs a pass.
type passState struct {
	digest  uint64
	member  *members.Member
	since   time.Time
	now     time.Time
	resync  time.Duration
	changes uint64
}

// current says whether the last pass still holds: same inputs, same healthy
// connection, no foreign change since, and younger than the resync interval. It
// returns the inventory that pass found.
func (t *appliedTable) current(s passState) (map[string]int32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.holds(s) || t.pass.digest != s.digest {
		return nil, false
	}
	return t.pass.inventory, true
}

// lastGroups are the group digests of the last pass when the member holds what that
// pass left (same healthy connection, no foreign change, no resync due): then only the
// groups whose digest differs need a pass. ok is false when the member needs a full one.
func (t *appliedTable) lastGroups(s passState) (plan.Groups, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.holds(s) || t.pass.groups.Keys == nil {
		return plan.Groups{}, false
	}
	return t.pass.groups, true
}

func (t *appliedTable) holds(s passState) bool {
	return t.unchangedSince(s) && s.now.Sub(t.pass.at) < s.resync
}

// unchangedSince says whether the member is as the last pass left it, as far as the
// watch can tell: that pass succeeded over the same, continuously healthy connection,
// and no foreign change was seen since. t.mu is held.
func (t *appliedTable) unchangedSince(s passState) bool {
	p := t.pass
	return p.done && p.member == s.member && p.since.Equal(s.since) && p.changes == t.changes
}

// inventory counts the objects the hub holds in the member by kind: after a
// successful pass, exactly what the plan wants there.
func (t *appliedTable) inventory() map[string]int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int32{}
	for kind, es := range t.entries {
		if es.Len() > 0 {
			out[kind] = int32(es.Len())
		}
	}
	for kind, d := range t.digested {
		if n := d.hashes.Len(); n > 0 {
			out[kind] = int32(n)
		}
	}
	return out
}

// startPass returns the state a pass starting now records when it succeeds.
func (t *appliedTable) startPass(s passState) passState {
	t.mu.Lock()
	defer t.mu.Unlock()
	s.changes = t.changes
	return s
}

// passed records a successful pass; failed forgets the last one, so that the next
// reconcile passes over the member again.
func (t *appliedTable) passed(s passState, inventory map[string]int32, groups plan.Groups, full bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := s.now
	if !full {
		at = t.pass.at // a partial pass checked only some objects: the resync stays due when it was
	}
	t.pass = memberPass{done: true, digest: s.digest, member: s.member, since: s.since, at: at,
		changes: s.changes, inventory: inventory, groups: groups}
	t.seal()
}

func (t *appliedTable) failed() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pass = memberPass{}
	t.seal()
}

// seal shares what the pass recorded of the digested kinds with the other members'
// records (sharedtable.Table.Seal); t.mu is held.
func (t *appliedTable) seal() {
	for _, d := range t.digested {
		d.hashes.Seal()
	}
}

// changedByOthers records that someone else changed or deleted one of the hub's
// objects in the member: the next reconcile passes over it and puts it back.
func (t *appliedTable) changedByOthers() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.changes++
}

// setRV records the resourceVersion of a write that changed only an object's status,
// so that its echo is known as the hub's own.
// It is for kinds whose status the hub writes alone (ServiceExport): for the others
// the fingerprint does not hold the resourceVersion.
func (t *appliedTable) setRV(k objKey, rv string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	es, id := t.entries[k.kind], nameHash(k)
	if es == nil || rv == "" || statusByOthers(k.kind) || memberprint.Digested(k.kind) {
		return
	}
	if e, ok := es.Get(id); ok {
		t.unprint(k, e)
		e.fp = fingerprint(k, 0, 0, rv)
		es.Set(id, e)
		t.print(k, e)
	}
}

func (r *ClusterSetReconciler) appliedFor(key members.Key) *appliedTable {
	if v, ok := r.applied.Load(key); ok {
		return v.(*appliedTable) // a new table's maps made for every call were 650 bytes a member a reconcile
	}
	v, _ := r.applied.LoadOrStore(key, &appliedTable{entries: map[string]*keytable.Table[appliedEntry]{},
		digested: map[string]*digestedTable{}, pool: &r.shared, namespaces: map[string]bool{}, prints: map[string]members.Print{}})
	return v.(*appliedTable)
}

// digestedTable records the hub's writes of one digested kind (memberprint.Digested)
// in a member: the hash of each object's content by its key. The members of a view
// hold the same objects but for those of the exports they are a source of, so the
// hashes are in a sharedtable.Table: what a member holds as others do is held once.
// The fingerprint the member holds follows from the hash (memberprint.DigestPrint of
// the key and the hash, as the digest the hub wrote is that hash) unless the object is
// odd: a write on its way, or another manager owning some of its fields.
type digestedTable struct {
	hashes *sharedtable.Table
	odd    map[uint64]uint64 // key -> fingerprint, where it is not the one that follows
}

func (d *digestedTable) get(kind string, id uint64) (appliedEntry, bool) {
	hash, ok := d.hashes.Get(id)
	if !ok {
		return appliedEntry{}, false
	}
	fp, odd := d.odd[id]
	if !odd {
		fp = memberprint.DigestPrint(kind, id, hash, memberprint.NoOthers)
	}
	return appliedEntry{hash: hash, fp: fp}, true
}

func (d *digestedTable) set(kind string, id uint64, e appliedEntry) {
	d.hashes.Set(id, e.hash)
	if e.fp == memberprint.DigestPrint(kind, id, e.hash, memberprint.NoOthers) {
		delete(d.odd, id)
		return
	}
	if d.odd == nil {
		d.odd = map[uint64]uint64{}
	}
	d.odd[id] = e.fp
}

func (d *digestedTable) delete(id uint64) {
	d.hashes.Delete(id)
	delete(d.odd, id)
}

// nameHash is the key of an object's entry within its kind.
func nameHash(k objKey) uint64 { return members.NameKey(k.namespace, k.name) }

func (t *appliedTable) get(k objKey) (appliedEntry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.entry(k)
}

// entry is k's entry; t.mu is held.
func (t *appliedTable) entry(k objKey) (appliedEntry, bool) {
	if d := t.digested[k.kind]; d != nil {
		return d.get(k.kind, nameHash(k))
	}
	if es := t.entries[k.kind]; es != nil {
		return es.Get(nameHash(k))
	}
	return appliedEntry{}, false
}

func (t *appliedTable) set(k objKey, e appliedEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.put(k, e)
}

// put records e for k and returns what it replaces; t.mu is held.
func (t *appliedTable) put(k objKey, e appliedEntry) (old appliedEntry, had bool) {
	if old, had = t.entry(k); had {
		t.unprint(k, old)
	}
	id := nameHash(k)
	if memberprint.Digested(k.kind) {
		d := t.digested[k.kind]
		if d == nil {
			d = &digestedTable{hashes: sharedtable.New(t.pool)}
			t.digested[k.kind] = d
		}
		d.set(k.kind, id, e)
	} else {
		es := t.entries[k.kind]
		if es == nil {
			es = &keytable.Table[appliedEntry]{}
			t.entries[k.kind] = es
		}
		es.Set(id, e)
	}
	t.print(k, e)
	return old, had
}

func (t *appliedTable) drop(k objKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, ok := t.entry(k)
	if !ok {
		return
	}
	t.unprint(k, old)
	if d := t.digested[k.kind]; d != nil {
		d.delete(nameHash(k))
	} else {
		t.entries[k.kind].Delete(nameHash(k))
	}
}

func (t *appliedTable) hasNamespace(ns string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.namespaces[ns]
}

func (t *appliedTable) setNamespace(ns string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ok {
		t.namespaces[ns] = true
	} else {
		delete(t.namespaces, ns)
	}
}

// isOwnWrite says whether an informer event about the hub's object o changes nothing
// the hub wrote: the echo of its own write (see appliedEntry.holds, which also lets a
// Peer's status written by its agent pass), or of its own prune (a deleted object the
// table no longer wants; prune drops the entry before deleting). An echo that arrives
// before the write returned, or of the first of an object's two writes (a
// ServiceImport's spec, then its status), is not yet at the recorded resourceVersion:
// it is known by the digest the hub recorded before writing (expect), which the object
// carries, and by nobody else owning fields of it.
func (t *appliedTable) isOwnWrite(k objKey, o client.Object, deleted bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entry(k)
	if deleted {
		return !ok
	}
	return ok && (e.holds(k.kind, o) || carriesDigest(o, e.hash))
}

// expect records, before the hub writes an object, the hash of what it writes, so
// that the write's echo is known as its own whenever it arrives (isOwnWrite); the
// write's answer then completes the entry (set), and a write that fails puts back what
// was recorded before (the returned undo). Its fingerprint is none the member can hold
// until then: the member's prints differ from the record while the write is on its
// way, as they would anyway.
func (t *appliedTable) expect(k objKey, hash uint64) (undo func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old, had := t.put(k, appliedEntry{hash: hash})
	return func() {
		if had {
			t.set(k, old)
		} else {
			t.drop(k)
		}
	}
}

// hashOf is the hash of an encoded object, the digest the hub writes on it: FNV-1a of
// its JSON but for its target-cluster annotation (`"strait.io/target-cluster":"c1"`,
// cut out of the bytes). That annotation is the member's own name, the same on every
// object the member holds, so it tells no two contents of one member apart; without it
// an object's digest is the same in every member that holds it, and so is the record's
// part of it (appliedTable.digested shares it).
func hashOf(data []byte) uint64 {
	h := fnv.New64a()
	if i := bytes.Index(data, []byte(targetKey)); i >= 0 {
		if j := bytes.IndexByte(data[i+len(targetKey):], '"'); j >= 0 {
			_, _ = h.Write(data[:i])
			data = data[i+len(targetKey)+j+1:]
		}
	}
	_, _ = h.Write(data)
	return h.Sum64()
}

// targetKey starts the target-cluster annotation in an object's JSON, up to its value.
const targetKey = `"` + straitv1.AnnotationTargetCluster + `":"`
