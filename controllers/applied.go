package controllers

import (
	"encoding/json"
	"hash/fnv"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/straitnet/strait/controllers/members"
)

// objKey names an object the hub writes in a member.
type objKey struct{ kind, namespace, name string }

func keyOf(kind string, o client.Object) objKey {
	return objKey{kind: kind, namespace: o.GetNamespace(), name: o.GetName()}
}

// appliedEntry is what the hub last wrote to an object and the resourceVersion the
// member answered with. While the member still holds that resourceVersion and the plan
// still wants the same content, the write is skipped: an unchanged clusterset costs no
// writes, and anybody else's change (a new resourceVersion) is overwritten at once.
type appliedEntry struct {
	rv         string
	specHash   uint64
	statusHash uint64
}

// appliedTable is one member connection's record of the hub's writes.
type appliedTable struct {
	mu         sync.Mutex
	entries    map[objKey]appliedEntry
	namespaces map[string]bool // namespaces known to exist in the member
}

func (r *ClusterSetReconciler) appliedFor(key members.Key) *appliedTable {
	v, _ := r.applied.LoadOrStore(key, &appliedTable{entries: map[objKey]appliedEntry{}, namespaces: map[string]bool{}})
	return v.(*appliedTable)
}

func (t *appliedTable) get(k objKey) (appliedEntry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[k]
	return e, ok
}

func (t *appliedTable) set(k objKey, e appliedEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.entries[k] = e
}

func (t *appliedTable) drop(k objKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.entries, k)
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

// isOwnWrite says whether an informer event is the echo of the hub's own write or
// prune: an object recorded with the same resourceVersion, or a deleted object the table
// no longer wants (prune drops the entry before deleting).
func (t *appliedTable) isOwnWrite(k objKey, rv string, deleted bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[k]
	if deleted {
		return !ok
	}
	return ok && e.rv == rv
}

func hashOf(v any) uint64 {
	data, _ := json.Marshal(v) // maps marshal with sorted keys
	h := fnv.New64a()
	_, _ = h.Write(data)
	return h.Sum64()
}
