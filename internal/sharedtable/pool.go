package sharedtable

import (
	"runtime"
	"sync"
	"weak"
)

// Pool keeps one node for equal entries, for as long as some table points to it: by
// the hash of its entries, weakly, so that a node no table holds any more is collected
// and forgotten. The zero Pool is ready; a nil *Pool shares nothing. It is safe for
// concurrent use.
type Pool struct {
	mu    sync.Mutex
	nodes map[uint64]weak.Pointer[node]
}

// Nodes is how many nodes the pool knows: those of every sealed table, each once,
// and those collected whose cleanup has not run yet.
func (p *Pool) Nodes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.nodes)
}

// seal is nd with its own nodes (those not yet shared) hashed and given to the pool;
// where the pool has an equal node, that one instead.
func (p *Pool) seal(nd *node) *node {
	if nd == nil || nd.shared {
		return nd
	}
	if nd.kids == nil {
		nd.hash = leafHash(nd.ents)
	} else {
		for i, k := range nd.kids {
			nd.kids[i] = p.seal(k)
		}
		nd.hash = innerHash(nd.kids)
	}
	return p.intern(nd)
}

// intern is the pool's node equal to nd, or nd, which the pool then keeps. Two
// unequal nodes of one hash (a 64-bit collision) cannot both be kept: the second
// stays its table's own.
func (p *Pool) intern(nd *node) *node {
	if p == nil {
		return nd
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.nodes[nd.hash]; ok {
		if have := w.Value(); have != nil {
			if have.equal(nd) {
				return have
			}
			return nd
		}
	}
	if p.nodes == nil {
		p.nodes = map[uint64]weak.Pointer[node]{}
	}
	nd.shared = true
	p.nodes[nd.hash] = weak.Make(nd)
	runtime.AddCleanup(nd, p.forget, nd.hash)
	return nd
}

// forget drops the pool's entry for hash once its node is collected (not when a
// newer node of that hash took the place of one collected before).
func (p *Pool) forget(hash uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if w, ok := p.nodes[hash]; ok && w.Value() == nil {
		delete(p.nodes, hash)
	}
}

// equal says whether two sealed nodes hold the same entries: their children are the
// pool's, so the same children are the same pointers.
func (nd *node) equal(o *node) bool {
	if nd.n != o.n || (nd.kids == nil) != (o.kids == nil) {
		return false
	}
	if nd.kids != nil {
		return *nd.kids == *o.kids
	}
	for i := range nd.ents {
		if nd.ents[i] != o.ents[i] {
			return false
		}
	}
	return true
}

// fold adds a word to a running hash, FNV's way with 64-bit words: the pool's hashes
// only find candidates, which are then compared, so a collision costs a node shared
// less, never a wrong one.
func fold(h, w uint64) uint64 { return (h ^ w) * 1099511628211 }

func leafHash(ents []entry) uint64 {
	h := uint64(14695981039346656037)
	for _, e := range ents {
		h = fold(fold(h, e.key), e.val)
	}
	return h
}

func innerHash(kids *[fanout]*node) uint64 {
	h := uint64(14695981039346656037) ^ 1 // not a leaf's of the same words
	for _, k := range kids {
		var kh uint64
		if k != nil {
			kh = k.hash
		}
		h = fold(h, kh)
	}
	return h
}
