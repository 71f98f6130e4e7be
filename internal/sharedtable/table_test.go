package sharedtable

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// TestTableIsAMap changes tables at random, sealing now and then, and checks each
// against a Go map: every key's value, and the count, through splits of nodes and
// their joining again as entries go.
func TestTableIsAMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		pool := &Pool{}
		tab, want := New(pool), map[uint64]uint64{}
		// Keys from a small set, so that deletions find entries and nodes join
		// again; their top bits alike in half the worlds, so that nodes go deep.
		keys := make([]uint64, 1+rng.IntN(5000))
		for i := range keys {
			keys[i] = rng.Uint64()
			if seed%2 == 0 {
				keys[i] >>= 20
			}
		}
		for step := range 20000 {
			k := keys[rng.IntN(len(keys))]
			switch r := rng.IntN(10); {
			case r < 6:
				v := rng.Uint64N(3) // values that repeat, as hashes of one content do
				tab.Set(k, v)
				want[k] = v
			case r < 9:
				tab.Delete(k)
				delete(want, k)
			default:
				tab.Seal()
			}
			if step%997 == 0 {
				checkTable(t, tab, want, keys)
			}
		}
		tab.Seal()
		checkTable(t, tab, want, keys)
	}
}

func checkTable(t *testing.T, tab *Table, want map[uint64]uint64, keys []uint64) {
	t.Helper()
	if tab.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", tab.Len(), len(want))
	}
	for _, k := range keys {
		got, ok := tab.Get(k)
		w, wok := want[k]
		if ok != wok || got != w {
			t.Fatalf("Get(%#x) = %d, %v; want %d, %v", k, got, ok, w, wok)
		}
	}
	if n := tab.root.count(); n+len(tab.delta) < len(want) {
		t.Fatalf("the tree holds %d entries and %d changes wait, for %d", n, len(tab.delta), len(want))
	}
}

// count counts the entries under nd, and checks that each node's count and form are
// those its entries give.
func (nd *node) count() int {
	if nd == nil {
		return 0
	}
	n := len(nd.ents)
	if nd.kids != nil {
		for _, k := range nd.kids {
			n += k.count()
		}
		if n <= leafMax {
			panic("a node of few entries has children")
		}
	}
	if n != nd.n {
		panic("a node's count is not its entries'")
	}
	return n
}

// TestTablesOfEqualEntriesShareTheirNodes: two members given the same objects in
// another order hold one tree; a third that differs in one object holds the nodes on
// that object's path and shares the rest.
func TestTablesOfEqualEntriesShareTheirNodes(t *testing.T) {
	pool := &Pool{}
	rng := rand.New(rand.NewPCG(7, 7))
	keys := make([]uint64, 10000)
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	a, b, c := New(pool), New(pool), New(pool)
	for _, k := range keys {
		a.Set(k, k*3)
	}
	for i := len(keys) - 1; i >= 0; i-- {
		b.Set(keys[i], keys[i]*3)
		c.Set(keys[i], keys[i]*3)
	}
	c.Set(keys[42], 1)
	for _, tab := range []*Table{a, b, c} {
		tab.Seal()
	}
	if a.root != b.root {
		t.Fatal("two tables of the same entries do not share their root")
	}
	shared, own := 0, 0
	walk(c.root, func(nd *node) {
		if nd == find(a.root, nd) {
			shared++
		} else {
			own++
		}
	})
	// The path to one entry: the root, a node a level (10,000 entries of random keys
	// are two levels of children deep) and the leaf.
	if own > 3 || shared < 100 {
		t.Errorf("a table that differs in one entry has %d nodes of its own and shares %d; want at most 3 of its own", own, shared)
	}
	if got := pool.Nodes(); got != nodes(a.root)+own {
		t.Errorf("the pool holds %d nodes, want %d (a's, and c's own)", got, nodes(a.root)+own)
	}
}

// TestThePoolForgetsWhatNoTableHolds: a table dropped, its nodes are collected and the
// pool forgets them.
func TestThePoolForgetsWhatNoTableHolds(t *testing.T) {
	pool := &Pool{}
	keep := New(pool)
	for k := range uint64(1000) {
		keep.Set(k<<40, k)
	}
	keep.Seal()
	kept := pool.Nodes()
	func() {
		drop := New(pool)
		for k := range uint64(5000) {
			drop.Set(k<<30+1, k)
		}
		drop.Seal()
		if pool.Nodes() <= kept {
			t.Fatal("a second table added no nodes to the pool")
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for pool.Nodes() != kept {
		if time.Now().After(deadline) {
			t.Fatalf("the pool holds %d nodes 10 s after a table was dropped, want %d", pool.Nodes(), kept)
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(keep)
	if v, ok := keep.Get(7 << 40); !ok || v != 7 {
		t.Fatalf("the kept table lost an entry: %d, %v", v, ok)
	}
}

// TestACollisionStaysUnshared: two nodes of different entries that hash alike are not
// taken for one another.
func TestACollisionStaysUnshared(t *testing.T) {
	pool := &Pool{}
	x := &node{n: 1, ents: []entry{{1, 1}}, hash: 5}
	y := &node{n: 1, ents: []entry{{1, 2}}, hash: 5}
	if got := pool.intern(x); got != x {
		t.Fatal("the first node of a hash was not kept")
	}
	if got := pool.intern(y); got != y || y.shared {
		t.Fatal("a node of other entries was taken for the pool's of the same hash")
	}
	z := &node{n: 1, ents: []entry{{1, 1}}, hash: 5}
	if got := pool.intern(z); got != x {
		t.Fatal("a node equal to the pool's was not given the pool's")
	}
}

func walk(nd *node, f func(*node)) {
	if nd == nil {
		return
	}
	f(nd)
	if nd.kids != nil {
		for _, k := range nd.kids {
			walk(k, f)
		}
	}
}

// find is the node under root that is nd, or nil.
func find(root, nd *node) *node {
	var out *node
	walk(root, func(x *node) {
		if x == nd {
			out = x
		}
	})
	return out
}

func nodes(root *node) int {
	n := 0
	walk(root, func(*node) { n++ })
	return n
}

// TestMembersSealAtOnce: the hub passes over members in parallel, each sealing its own
// table through the one pool; tables of the same entries end up sharing one tree, and
// each reads back what it was given (run with -race).
func TestMembersSealAtOnce(t *testing.T) {
	pool := &Pool{}
	tabs := make([]*Table, 8)
	done := make(chan struct{})
	for i := range tabs {
		tabs[i] = New(pool)
		go func() {
			defer func() { done <- struct{}{} }()
			for round := range uint64(3) {
				for k := range uint64(3000) {
					tabs[i].Set(spread(k), k+round)
				}
				tabs[i].Seal()
			}
		}()
	}
	for range tabs {
		<-done
	}
	for i, tab := range tabs {
		if tab.root != tabs[0].root {
			t.Errorf("table %d does not share the tree of the others", i)
		}
		if v, ok := tab.Get(spread(7)); !ok || v != 9 {
			t.Errorf("table %d: Get = %d, %v; want 9", i, v, ok)
		}
	}
}

// spread gives small numbers keys spread over the 64 bits, as the names' hashes are.
func spread(k uint64) uint64 { return k * 0x9e3779b97f4a7c15 }
