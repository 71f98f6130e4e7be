package sharedtable

import (
	"slices"
)

const (
	// bits of a key pick a node's child at each level: fanout children a node.
	bits   = 4
	fanout = 1 << bits
	// leafMax is how many entries a node holds as one sorted array; a node with more
	// has fanout children instead. A node's form follows from its entries alone, so
	// that equal entries make equal nodes whatever changes led to them.
	leafMax = 64
	// minDelta is how many changes the front map takes before they are merged into
	// the tree, however small it is (keytable's rule).
	minDelta = 64
)

// Table maps uint64 keys to uint64 values. A change is a map write; every len/8
// changes (64 at least) are merged into the tree, whose new nodes are the table's own
// until Seal gives them to the pool. The zero Table is empty and ready and shares
// nothing; New gives one that shares through a Pool. It is not safe for concurrent use.
type Table struct {
	pool  *Pool
	root  *node
	delta map[uint64]change // changes not yet merged: a value, or a deletion
	n     int               // live entries
}

type change struct {
	key, val uint64
	deleted  bool
}

type entry struct{ key, val uint64 }

// node is a subtree: a sorted array of at most leafMax entries, or fanout children
// split by the next bits of the key. A node in the pool (shared) is never changed.
type node struct {
	hash   uint64 // of the entries, set when sealed
	n      int    // entries under it
	shared bool   // in the pool: other tables may point to it
	kids   *[fanout]*node
	ents   []entry
}

// New is an empty table whose sealed nodes are shared through p.
func New(p *Pool) *Table { return &Table{pool: p} }

// Len is the number of entries.
func (t *Table) Len() int { return t.n }

// Get returns key's value and whether there is one.
func (t *Table) Get(key uint64) (uint64, bool) {
	if c, ok := t.delta[key]; ok {
		return c.val, !c.deleted
	}
	return t.root.get(key)
}

func (nd *node) get(key uint64) (uint64, bool) {
	for depth := 0; nd != nil && nd.kids != nil; depth++ {
		nd = nd.kids[nibble(key, depth)]
	}
	if nd == nil {
		return 0, false
	}
	if i, ok := slices.BinarySearchFunc(nd.ents, key, func(e entry, k uint64) int { return cmp64(e.key, k) }); ok {
		return nd.ents[i].val, true
	}
	return 0, false
}

// Set sets key's value. Setting the value a key has changes nothing.
func (t *Table) Set(key, val uint64) {
	old, had := t.Get(key)
	if had && old == val {
		return
	}
	if !had {
		t.n++
	}
	t.put(change{key: key, val: val})
}

// Delete removes key's entry, if any.
func (t *Table) Delete(key uint64) {
	if _, ok := t.Get(key); !ok {
		return
	}
	t.n--
	if _, inTree := t.root.get(key); !inTree {
		delete(t.delta, key) // a key the tree never had leaves no trace
		return
	}
	t.put(change{key: key, deleted: true})
}

func (t *Table) put(c change) {
	if t.delta == nil {
		t.delta = map[uint64]change{}
	}
	t.delta[c.key] = c
	if len(t.delta) > max(minDelta, t.n/8) {
		t.merge()
	}
}

// Seal merges the changes and gives the table's own nodes to the pool, which keeps
// one node for equal entries: after it, the table holds only the nodes no other
// sealed table has. It is for when a batch of changes is done.
func (t *Table) Seal() {
	t.merge()
	t.root = t.pool.seal(t.root)
}

// merge writes the changes into the tree.
func (t *Table) merge() {
	if len(t.delta) == 0 {
		return
	}
	cs := make([]change, 0, len(t.delta))
	for _, c := range t.delta {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b change) int { return cmp64(a.key, b.key) })
	t.root, t.delta = merge(t.root, 0, cs), nil
}

// merge is nd (at depth) with the changes cs, sorted by key and all under nd's prefix.
// Nodes on the way are made anew; those no change reaches are kept as they are.
func merge(nd *node, depth int, cs []change) *node {
	if len(cs) == 0 {
		return nd
	}
	if nd == nil || nd.kids == nil {
		var ents []entry
		if nd != nil {
			ents = nd.ents
		}
		return build(mergeEntries(ents, cs), depth)
	}
	kids, n := new([fanout]*node), 0
	for i, run := range split(cs, depth, func(c change) uint64 { return c.key }) {
		kids[i] = merge(nd.kids[i], depth+1, run)
		if kids[i] != nil {
			n += kids[i].n
		}
	}
	if n > leafMax {
		return &node{n: n, kids: kids}
	}
	var ents []entry // few enough again for one array
	for _, k := range kids {
		ents = k.appendTo(ents)
	}
	return build(ents, depth)
}

// build is the node of ents, sorted by key, at depth.
func build(ents []entry, depth int) *node {
	switch {
	case len(ents) == 0:
		return nil
	case len(ents) <= leafMax:
		return &node{n: len(ents), ents: slices.Clone(ents)} // its own array, exactly sized
	}
	kids := new([fanout]*node)
	for i, run := range split(ents, depth, func(e entry) uint64 { return e.key }) {
		kids[i] = build(run, depth+1)
	}
	return &node{n: len(ents), kids: kids}
}

// split cuts items, sorted by key, into the runs of each child at depth.
func split[T any](items []T, depth int, key func(T) uint64) [fanout][]T {
	var out [fanout][]T
	for len(items) > 0 {
		i := nibble(key(items[0]), depth)
		j := 1
		for j < len(items) && nibble(key(items[j]), depth) == i {
			j++
		}
		out[i], items = items[:j], items[j:]
	}
	return out
}

// mergeEntries is ents, sorted, with the changes cs, sorted, applied: a new array.
func mergeEntries(ents []entry, cs []change) []entry {
	out := make([]entry, 0, len(ents)+len(cs))
	i := 0
	for _, c := range cs {
		for ; i < len(ents) && ents[i].key < c.key; i++ {
			out = append(out, ents[i])
		}
		if i < len(ents) && ents[i].key == c.key {
			i++ // replaced or deleted
		}
		if !c.deleted {
			out = append(out, entry{key: c.key, val: c.val})
		}
	}
	return append(out, ents[i:]...)
}

// appendTo appends nd's entries, in order.
func (nd *node) appendTo(out []entry) []entry {
	switch {
	case nd == nil:
		return out
	case nd.kids == nil:
		return append(out, nd.ents...)
	}
	for _, k := range nd.kids {
		out = k.appendTo(out)
	}
	return out
}

// nibble is the key's bits that pick its child at depth.
func nibble(key uint64, depth int) int { return int(key>>(64-bits*(depth+1))) & (fanout - 1) }

func cmp64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
