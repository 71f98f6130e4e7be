package keytable

import (
	"slices"
)

// minDelta is how many changes the front map takes before they are merged into the
// sorted array, however small the array: small, as a hub holds thousands of tables
// (per member and kind), and a Go map costs what the table is for saving.
const minDelta = 64

// Table maps uint64 keys to values of V. Lookups cost a map lookup and a binary search;
// a change is a map write, and every len/8 changes (64 at least) are merged into the
// sorted array in one pass: a constant number of array moves per change, amortised.
// The zero Table is empty and ready. It is not safe for concurrent use.
type Table[V any] struct {
	keys []uint64 // sorted, unique
	vals []V      // vals[i] is keys[i]'s
	// delta are the changes not yet merged: a value, or a deletion.
	delta map[uint64]change[V]
	n     int // live entries
}

type change[V any] struct {
	val     V
	deleted bool
}

// Len is the number of entries.
func (t *Table[V]) Len() int { return t.n }

// Get returns key's value and whether there is one.
func (t *Table[V]) Get(key uint64) (V, bool) {
	if c, ok := t.delta[key]; ok {
		return c.val, !c.deleted
	}
	return t.base(key)
}

func (t *Table[V]) base(key uint64) (V, bool) {
	if i, ok := slices.BinarySearch(t.keys, key); ok {
		return t.vals[i], true
	}
	var zero V
	return zero, false
}

// Set sets key's value.
func (t *Table[V]) Set(key uint64, v V) {
	if c, ok := t.delta[key]; ok {
		if c.deleted {
			t.n++
		}
		t.delta[key] = change[V]{val: v}
		return
	}
	if _, ok := t.base(key); !ok {
		t.n++
	}
	t.put(key, change[V]{val: v})
}

// Delete removes key's entry, if any.
func (t *Table[V]) Delete(key uint64) {
	if _, ok := t.Get(key); !ok {
		return
	}
	t.n--
	if _, inBase := t.base(key); !inBase {
		delete(t.delta, key) // a key the array never had leaves no trace
		return
	}
	t.put(key, change[V]{deleted: true})
}

func (t *Table[V]) put(key uint64, c change[V]) {
	limit := max(minDelta, len(t.keys)/8)
	if t.delta == nil {
		t.delta = map[uint64]change[V]{}
	}
	t.delta[key] = c
	if len(t.delta) > limit {
		t.merge()
	}
}

// merge writes the changes into a new sorted array, sized to the live entries.
func (t *Table[V]) merge() {
	changed := make([]uint64, 0, len(t.delta))
	for k := range t.delta {
		changed = append(changed, k)
	}
	slices.Sort(changed)
	keys, vals := make([]uint64, 0, t.n), make([]V, 0, t.n)
	i := 0
	for _, k := range changed {
		for ; i < len(t.keys) && t.keys[i] < k; i++ {
			keys, vals = append(keys, t.keys[i]), append(vals, t.vals[i])
		}
		if i < len(t.keys) && t.keys[i] == k {
			i++ // replaced or deleted
		}
		if c := t.delta[k]; !c.deleted {
			keys, vals = append(keys, k), append(vals, c.val)
		}
	}
	keys, vals = append(keys, t.keys[i:]...), append(vals, t.vals[i:]...)
	t.keys, t.vals, t.delta = keys, vals, nil
}
