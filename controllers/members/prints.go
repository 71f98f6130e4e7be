package members

import (
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/straitnet/strait/internal/keytable"
	"github.com/straitnet/strait/internal/memberprint"
)

// PrintFunc fingerprints a member's object of a kind (the Kind of its GroupVersionKind)
// for Prints: ok says whether the object counts at all (for the hub: it carries the
// ClusterSet's labels).
type PrintFunc func(kind string, obj client.Object) (fp uint64, ok bool)

// Print is a kind's count of the objects that count and the sum of their fingerprints.
type Print = memberprint.Print

// Prints keeps, per kind, the Print of the objects an informer holds, from that
// informer's events: the hub compares it with its record of its own writes without
// listing anything (see Member.Print).
//
// Each kind's state is the last fingerprint of every object, by namespace and name
// (the informer store's key, hashed: NameKey), that counted at its last event: an add
// or an update sets it (or takes it out when the object no longer counts), a delete
// takes it out. The print is a function of that
// map, kept as it changes, so it converges on the informer's store whatever the order
// or the kind of events (a relist's updates and DeletedFinalStateUnknown included),
// and a delete takes out exactly what its object had put in even though a watch's
// delete event carries the resourceVersion of the delete.
type Prints struct {
	fp    PrintFunc
	kinds map[string]*kindPrints // fixed at NewPrints
}

type kindPrints struct {
	mu    sync.Mutex
	print Print
	// fps are the fingerprints by the hash of namespace and name (NameKey), in a
	// keytable: 16 bytes an object, where a Go map took 57 and keys of strings some 66.
	// Two names that hash alike would share one fingerprint, a 64-bit collision of the
	// kind the sums already allow.
	fps keytable.Table[uint64]
	// synced says whether the handler has been handed the informer's initial list;
	// nil for a handler fed by hand (a stand-in for an informer).
	synced func() bool
}

// NewPrints keeps the prints of the given kinds, fingerprinting objects with fp.
func NewPrints(fp PrintFunc, kinds ...string) *Prints {
	p := &Prints{fp: fp, kinds: make(map[string]*kindPrints, len(kinds))}
	for _, k := range kinds {
		p.kinds[k] = &kindPrints{}
	}
	return p
}

// Handler is the event handler that keeps kind's print: the informer of kind's objects
// calls it, its initial list included. Nil for a kind Prints does not keep.
func (p *Prints) Handler(kind string) toolscache.ResourceEventHandler {
	k := p.kinds[kind]
	if k == nil {
		return nil
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.saw(p.fp, kind, obj) },
		UpdateFunc: func(_, obj any) { k.saw(p.fp, kind, obj) },
		DeleteFunc: func(obj any) { k.gone(obj) },
	}
}

// Print is kind's print as its handler has been handed the informer's events. ok is
// false when Prints does not keep kind or the handler has not yet been handed the
// informer's initial list. The handler runs behind the informer's store: a print that
// differs from what the store holds says only that a change is on its way.
func (p *Prints) Print(kind string) (Print, bool) {
	k := p.kinds[kind]
	if k == nil || k.synced != nil && !k.synced() {
		return Print{}, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.print, true
}

// setSynced makes kind's print wait for synced (the registration of its handler); it
// is called before the informers start.
func (p *Prints) setSynced(kind string, synced func() bool) {
	if k := p.kinds[kind]; k != nil {
		k.synced = synced
	}
}

// saw records an object added or updated: its fingerprint when it counts, nothing
// when it does not (any fingerprint it had is taken out).
func (k *kindPrints) saw(fp PrintFunc, kind string, obj any) {
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	ns, name := o.GetNamespace(), o.GetName()
	f, counts := fp(kind, o)
	k.mu.Lock()
	defer k.mu.Unlock()
	key := NameKey(ns, name)
	k.takeOut(key)
	if !counts {
		return
	}
	k.fps.Set(key, f)
	k.print.Add(f)
}

// gone records an object deleted, also one whose delete the informer missed
// (DeletedFinalStateUnknown, from a relist).
func (k *kindPrints) gone(obj any) {
	key, ok := memberprint.KeyOfDeleted(obj)
	if !ok {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.takeOut(key)
}

// takeOut takes an object's fingerprint out of the print; k.mu is held.
func (k *kindPrints) takeOut(key uint64) {
	f, ok := k.fps.Get(key)
	if !ok {
		return
	}
	k.fps.Delete(key)
	k.print.Remove(f)
}

// NameKey is the 64-bit key of an object by its namespace and name (memberprint.NameKey).
func NameKey(ns, name string) uint64 { return memberprint.NameKey(ns, name) }
