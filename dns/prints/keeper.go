package prints

import (
	"cmp"
	"slices"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/keytable"
	"github.com/straitnet/strait/internal/memberprint"
)

// MaxPrints is how many entries status.prints takes (the CRD's MaxItems).
const MaxPrints = 64

// Keeper keeps the member's print of the hub's objects per ClusterSet and kind, and the
// connections of its Peers, from informer events or a reflector's store operations.
// Each kind's state is the last fingerprint and ClusterSet of every object, by
// namespace and name (the informer store's key, hashed: memberprint.NameKey), that
// counted at its last event: an add or an update sets it (or takes it out when
// the object no longer counts), a delete takes it out. The prints are a function of
// that state, kept as it changes, so they converge on the informer's store whatever
// the order of events (a relist's updates and DeletedFinalStateUnknown included), and
// a delete takes out exactly what its object had put in even though a watch's delete
// event carries the resourceVersion of the delete. Of every Peer, the hub's or not, it
// also keeps the connection (Connections). It is safe for concurrent use.
type Keeper struct {
	// kinds' keys and pointers are fixed at NewKeeper; the tables, behind mu.
	kinds  map[string]*keytable.Table[held]
	mu     sync.Mutex
	prints map[setKind]memberprint.Print // no entry: count 0
	// peers are the connections of the Peers that have a state, by NameKey: a
	// member has a Peer for each other member of its ClusterSets, a thousand at most.
	peers map[uint64]straitv1.ConnectionStatus
}

// held is what the keeper holds of one object: 24 bytes with its key. The ClusterSet
// shares the bytes of the object's label value.
type held struct {
	fp         uint64
	clusterSet string
}

type setKind struct{ clusterSet, kind string }

// NewKeeper keeps the prints of memberprint.ReportedKinds.
func NewKeeper() *Keeper {
	k := &Keeper{kinds: map[string]*keytable.Table[held]{}, prints: map[setKind]memberprint.Print{},
		peers: map[uint64]straitv1.ConnectionStatus{}}
	for _, kind := range memberprint.ReportedKinds() {
		k.kinds[kind] = &keytable.Table[held]{}
	}
	return k
}

// Handler is the event handler that keeps kind's prints; changed, when not nil, is
// called after every event (the keeper's lock is not held).
func (k *Keeper) Handler(kind string, changed func()) toolscache.ResourceEventHandler {
	done := func() {
		if changed != nil {
			changed()
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.Saw(kind, obj); done() },
		UpdateFunc: func(_, obj any) { k.Saw(kind, obj); done() },
		DeleteFunc: func(obj any) { k.Gone(kind, obj); done() },
	}
}

// Saw records an object of kind added or updated: its fingerprint when it counts,
// nothing when it does not (any fingerprint it had is taken out); of a Peer, its
// connection too. A kind the keeper does not keep, or anything but an object, is
// ignored.
func (k *Keeper) Saw(kind string, obj any) {
	fps := k.kinds[kind]
	if fps == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.saw(fps, kind, obj)
}

// saw is Saw with k.mu held.
func (k *Keeper) saw(fps *keytable.Table[held], kind string, obj any) {
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	key := memberprint.NameKey(o.GetNamespace(), o.GetName())
	k.takeOut(fps, kind, key)
	if kind == peerKind {
		k.sawPeer(key, obj)
	}
	clusterSet, counts := memberprint.Counted(o)
	if !counts {
		return
	}
	fp := memberprint.Of(kind, o)
	fps.Set(key, held{fp: fp, clusterSet: clusterSet})
	sk := setKind{clusterSet, kind}
	p := k.prints[sk]
	p.Add(fp)
	k.prints[sk] = p
}

// Gone records an object of kind deleted, also one whose delete the informer missed
// (DeletedFinalStateUnknown, from a relist).
func (k *Keeper) Gone(kind string, obj any) {
	key, ok := memberprint.KeyOfDeleted(obj)
	fps := k.kinds[kind]
	if !ok || fps == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.takeOut(fps, kind, key)
	if kind == peerKind {
		delete(k.peers, key)
	}
}

// Replace makes kind's objects those of list (a relist's, or the first list): the
// objects the keeper had and list lacks are taken out. A report sees the prints from
// before or from after, never between.
func (k *Keeper) Replace(kind string, list []any) {
	fps := k.kinds[kind]
	if fps == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	*fps = keytable.Table[held]{}
	if kind == peerKind {
		clear(k.peers)
	}
	for sk := range k.prints {
		if sk.kind == kind {
			delete(k.prints, sk)
		}
	}
	for _, obj := range list {
		k.saw(fps, kind, obj)
	}
}

// takeOut takes an object's fingerprint out of its ClusterSet's print; k.mu is held.
// A print that comes to nothing goes, so that a ClusterSet of which the member holds
// nothing any more is not reported (but for the member's own, Report).
func (k *Keeper) takeOut(fps *keytable.Table[held], kind string, key uint64) {
	h, ok := fps.Get(key)
	if !ok {
		return
	}
	fps.Delete(key)
	sk := setKind{h.clusterSet, kind}
	p := k.prints[sk]
	p.Remove(h.fp)
	if p.N == 0 {
		delete(k.prints, sk)
		return
	}
	k.prints[sk] = p
}

// Report is status.prints: every kind of memberprint.ReportedKinds for the member's own
// ClusterSet (own, the Membership's strait.io/clusterset label; "" for none) and for
// every ClusterSet of which the member holds objects, a kind it holds none of with
// count 0, sorted by ClusterSet and kind. The own ClusterSet comes first among those
// kept when there are more than MaxPrints entries; omitted says how many ClusterSets
// were left out then (the others in order of their names are kept).
func (k *Keeper) Report(own string) (prints []straitv1.MemberPrint, omitted int) {
	k.mu.Lock()
	held := make(map[setKind]memberprint.Print, len(k.prints))
	var others []string
	for sk, p := range k.prints {
		held[sk] = p
		if sk.clusterSet != own && !slices.Contains(others, sk.clusterSet) {
			others = append(others, sk.clusterSet)
		}
	}
	k.mu.Unlock()
	slices.Sort(others)
	kinds := memberprint.ReportedKinds()
	perSet := len(kinds)
	sets := others
	if own != "" {
		sets = append([]string{own}, others...)
	}
	if keep := MaxPrints / perSet; len(sets) > keep {
		omitted = len(sets) - keep
		sets = sets[:keep]
	}
	prints = make([]straitv1.MemberPrint, 0, len(sets)*perSet)
	for _, cs := range sets {
		for _, kind := range kinds {
			p := held[setKind{cs, kind}]
			prints = append(prints, straitv1.MemberPrint{ClusterSet: cs, Kind: kind, Count: int32(p.N), Sum: memberprint.FormatSum(p.Sum)})
		}
	}
	slices.SortFunc(prints, compare)
	return prints, omitted
}

// compare orders prints by ClusterSet, then kind.
func compare(a, b straitv1.MemberPrint) int {
	return cmp.Or(cmp.Compare(a.ClusterSet, b.ClusterSet), cmp.Compare(a.Kind, b.Kind))
}

// Equal says whether two lists of prints hold the same entries, in whatever order.
func Equal(a, b []straitv1.MemberPrint) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, compare)
	slices.SortFunc(b, compare)
	return slices.Equal(a, b)
}
