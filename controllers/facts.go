package controllers

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/controllers/members"
	"github.com/straitnet/strait/internal/connections"
	"github.com/straitnet/strait/internal/memberprint"
	"github.com/straitnet/strait/plan"
)

// memberFacts are the facts last read from one member connection's informers, kept
// from one reconcile to the next: a reconcile reads again only the members whose
// informers reported a change of something the facts hold since, and hands the planner
// the very same *plan.MemberFacts for the others, which it then neither indexes nor
// compares again (plan.Planner). At 1,000 members a change in one had every member's
// facts read anew, its Services, EndpointSlices, ServiceExports and its Peers (one per
// other member: a million deep copies a reconcile).
//
// The flags are cleared before the facts are read, so a change reported while they are
// read, which the read may or may not have seen, makes the next reconcile read them
// again. An informer updates its store before it hands the change to its handlers, so a
// read after a handler ran sees that change.
type memberFacts struct {
	// changed: a change of something the facts hold was reported since they were read.
	changed atomic.Bool
	// peersStale: a Peer's status changed in what the plan reads of it only for the
	// ClusterSet's status (its latency in the member's summary; a state counts as a
	// change), or the Peers were read from a member that reports no summary of them
	// (whose Peers nobody watches): the facts are read again when peersRefresh has
	// passed since they were.
	peersStale atomic.Bool

	mu     sync.Mutex
	member *members.Member // the connection they were read through
	inputs uint64          // of what the spec asks of the member (factsInputs)
	f      *plan.MemberFacts
	readAt time.Time
}

// peersRefresh is how long a Peer's latency, which every active gateway writes at each
// health round (5 s) and strait dns reports at most every 30 s, may be behind in the
// ClusterSet's status before the member's facts are read again for it alone; a change
// of a Peer's state is read at the next reconcile. A member that reports no summary of
// its Peers has them read again at the first reconcile past peersRefresh.
const peersRefresh = 30 * time.Second

// factsOf is the facts kept for a member connection.
func (r *ClusterSetReconciler) factsOf(k members.Key) *memberFacts {
	v, _ := r.facts.LoadOrStore(k, &memberFacts{})
	return v.(*memberFacts)
}

// factsChanged notes a change an informer of the member reported (old the object
// before an update; obj nil for a change of the member's health): the member's facts
// are read again at the next reconcile when they hold, or may hold, what changed.
func (r *ClusterSetReconciler) factsChanged(key members.Key, old, obj client.Object) {
	mf, ok := r.facts.Load(key)
	if !ok {
		return // never read: the next reconcile reads them
	}
	switch factsChange(r.relevanceFor(key.ClusterSet), old, obj) {
	case factsHold:
		mf.(*memberFacts).changed.Store(true)
	case peerStatusOnly:
		mf.(*memberFacts).peersStale.Store(true)
	}
}

// factsChangeKind is what a member's change does to its facts.
type factsChangeKind int

const (
	factsUnchanged factsChangeKind = iota
	factsHold                      // the facts hold what changed
	peerStatusOnly                 // a Peer's latency changed, no state did
)

// factsChange says what a change does to the facts readFacts reads: every Gateway,
// Membership (its summary of the member's Peers included) and GlobalIngress of the
// system namespace; the ServiceExports the
// plan counts (all of them under the MemberExports policy); the exported Services
// and the gateways' LoadBalancer Service; and those Services' EndpointSlices. A
// ServiceImport, or a Service or EndpointSlice of a service nobody exports, changes
// nothing the plan reads. A change of the member's health (obj nil) is taken as one
// of everything: a member back after a cut is listed anew by its informers.
func factsChange(rel *relevance, old, obj client.Object) factsChangeKind {
	switch o := obj.(type) {
	case nil:
		return factsHold
	case *straitv1.Membership:
		// The plan reads its spec and the summary of the member's Peers in its status;
		// the rest of the status is the member's daemons' and the prints.
		was, ok := old.(*straitv1.Membership)
		switch {
		case !ok || was.Generation != o.Generation || !connections.SameStates(was.Status.Connections, o.Status.Connections):
			return factsHold
		case !connections.Same(was.Status.Connections, o.Status.Connections):
			return peerStatusOnly
		}
		return factsUnchanged
	case *straitv1.Gateway, *straitv1.GlobalIngress:
		return factsHold
	}
	if rel.input(obj) {
		return factsHold
	}
	return factsUnchanged
}

// read returns the member's facts: those kept while they were read through the same
// connection (which knows the same kube-system UID), for the same inputs, and nothing
// they hold was reported changed since; else those read now from the member's
// informers (and kept when read without error).
func (mf *memberFacts) read(m *members.Member, inputs uint64, now time.Time,
	read func() (*plan.MemberFacts, error)) (*plan.MemberFacts, error) {
	mf.mu.Lock()
	defer mf.mu.Unlock()
	if mf.f != nil && mf.member == m && mf.inputs == inputs && !mf.changed.Load() && mf.f.KubeSystemUID == m.KnownKubeSystemUID() &&
		!(mf.peersStale.Load() && now.Sub(mf.readAt) >= peersRefresh) {
		return mf.f, nil
	}
	mf.changed.Store(false)
	mf.peersStale.Store(false)
	f, err := read()
	if err != nil {
		mf.f = nil
		return nil, err
	}
	f.KubeSystemUID = m.KnownKubeSystemUID()
	mf.member, mf.inputs, mf.f, mf.readAt = m, inputs, f, now
	if !reportsConnections(f.Membership) {
		mf.peersStale.Store(true) // read from the API server: nobody watches them
	}
	return f, nil
}

// factsInputs hashes what the spec asks of a member's facts: the exports declared for
// it (summed, so in any order and without sorting them: this runs per member at every
// reconcile), the export policy, and the Service its gateways are reached through.
func factsInputs(declared map[types.NamespacedName]bool, memberExports bool, gwService *types.NamespacedName) uint64 {
	var sum uint64
	for k := range declared {
		sum += mix64(members.NameKey(k.Namespace, k.Name))
	}
	h := mix64(sum ^ uint64(len(declared)))
	if memberExports {
		h = memberprint.HashString(h, "member-exports")
	}
	if gwService != nil {
		h = memberprint.HashString(memberprint.HashString(h, gwService.Namespace), gwService.Name)
	}
	return h
}
