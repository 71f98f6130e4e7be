package plan

import (
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Planner computes the plans of one ClusterSet one after another, as the hub does at
// every reconcile, and resolves again only the exports whose inputs changed since its
// last plan: each export's resolution (its sources, type, ports, properties and
// conflicts) is kept with the inputs it came from and taken over as it is while they
// are the same. Its plans equal Compute's (TestPlannerEqualsCompute).
//
// An export's inputs are its spec entries (the clusters it is declared in, whether it
// prefers local endpoints), the clusters it is exported from, and in each of those the
// identity and version (UID and resourceVersion) of its Service, its ServiceExport and
// each of its EndpointSlices, in the order the facts hold them. An API server gives an
// object a new resourceVersion at every change, so the same UID and resourceVersion is
// the same object; an object without both (written by hand, as `strait render
// --observed` reads) never counts as unchanged.
//
// A *MemberFacts handed to a Planner is never changed afterwards, and a member whose
// facts changed comes as a new *MemberFacts (Observed). So a member's facts that are the
// same pointer as at the last plan are the same facts: the planner keeps its index of
// them, and an export whose clusters all hold the facts it was last compared with is
// taken over without reading its objects' versions, which at 10,000 exports was a
// quarter of a reconcile's CPU. A new pointer falls back to comparing versions, so the
// same objects listed anew are still taken over.
//
// A plan's digests take over the last plan's for the exports taken over
// (digestHandoff), and its globalnet allocations the last plan's for every cluster
// whose facts, global CIDR and exports are the same (keptAllocation). The status is
// computed in full each time. A Planner is not safe for concurrent use.
type Planner struct {
	// last are the last plan's exports in its order (by key), each resolution with what
	// it was resolved from (exportPlan.kept), and spec the ValidSpec it was computed
	// from: a plan of the same spec under the Declared policy gathers the same exports,
	// and takes them over one by one (takeOver); another looks them up by key
	// (resolved).
	last []*exportPlan
	spec *ValidSpec
	// handoff brings the last plan's digests, once prepared, to the next.
	handoff *digestHandoff
	// indexes are the last plan's indexes of its members' facts, by cluster: each is
	// used again while the member's facts are the same *MemberFacts.
	indexes map[string]*memberIndex
	// allocations are the last plan's globalnet allocations with what they were made
	// from, by cluster (keptAllocation).
	allocations map[string]*keptAllocation
	// checked is the last spec Check took as valid, for the ClusterSet of that UID and
	// generation.
	checked checkedSpec
	// Reused and Resolved count, over the last plan, the exports taken over and those
	// resolved again; Visited the exports whose objects' versions it compared, those
	// exported from a member whose facts came as a new *MemberFacts; Allocated the
	// clusters whose globalnet allocation it made anew.
	Reused, Resolved, Visited, Allocated int
}

// keptExport is what a planner keeps with an export's resolution (exportPlan.kept): the
// versions of the facts it came from, and its digests.
type keptExport struct {
	// digests are the export's digests as the plans that took it over computed them,
	// one per view and cluster that exports it, and one per view for the others
	// (Plan.cachedDigest); mu guards them: the hub asks for digests from a goroutine
	// per member.
	mu      sync.Mutex
	digests []keptDigest
	// from are the export's exportedFrom clusters, sorted.
	from []string
	// versions are, per cluster of from, its Service's, its ServiceExport's and its
	// EndpointSlices' versions, each cluster's closed by a "none" (a slice is never
	// none, so the close is unambiguous).
	versions []objectVersion
	// known says whether every one of versions is known: only then do the same
	// versions, and so the same facts, make the export unchanged.
	known bool
	// facts are, per cluster of from, the facts versions were last read or found in.
	// Facts handed over are never changed (Observed), so while every cluster holds the
	// same *MemberFacts, its versions are still these. A plan that finds them in new
	// facts records those, whether or not the plan is kept: either way they hold them.
	facts []*MemberFacts
}

// objectVersion identifies one state of an object; the zero value stands for "none".
type objectVersion struct {
	present bool
	uid     types.UID
	rv      string
}

// known says whether v names one state of an object or the absence of one: an object
// without a UID or a resourceVersion has no known version.
func (v objectVersion) known() bool { return !v.present || v.uid != "" && v.rv != "" }

// NewPlanner returns a planner with nothing kept: its first plan resolves every export.
func NewPlanner() *Planner { return &Planner{} }

// checkedSpec is a ClusterSet generation found valid.
type checkedSpec struct {
	uid        types.UID
	generation int64
	spec       *ValidSpec
}

// Check is plan.Check(cs), but for a ClusterSet whose UID and generation are those of the
// last one it found valid, whose ValidSpec it returns: the API server gives every change
// of a ClusterSet's spec a new generation, and the hub reconciles a ClusterSet far more
// often for its members' changes than for its own (validating 10,000 exports costs some
// 8 ms and 2 MB). A ClusterSet without a UID or a generation (not from an API server) is
// always checked.
func (pl *Planner) Check(cs *straitv1.ClusterSet) (*ValidSpec, field.ErrorList) {
	c := pl.checked
	if c.spec != nil && cs.UID != "" && cs.Generation != 0 && c.uid == cs.UID && c.generation == cs.Generation &&
		c.spec.clusterSet == (types.NamespacedName{Namespace: cs.Namespace, Name: cs.Name}) {
		return c.spec, nil
	}
	v, errs := Check(cs)
	if len(errs) > 0 {
		pl.checked = checkedSpec{}
		return nil, errs
	}
	pl.checked = checkedSpec{uid: cs.UID, generation: cs.Generation, spec: v}
	return v, nil
}

// takeOver is planExports for a plan of the spec of the last one under the Declared
// policy: the same exports, from the same clusters, so each is the last plan's
// resolution while the facts it read are the same, and resolved again from the spec's
// part of it otherwise. It allocates nothing for an export taken over, where gathering
// them anew made 10,000 exports' maps each time, and looks nothing up by key.
func (pl *Planner) takeOver(p *Plan) []*exportPlan {
	out := make([]*exportPlan, 0, len(pl.last))
	for _, old := range pl.last {
		if pl.unchanged(p, old) {
			pl.Reused++
			out = append(out, old)
			continue
		}
		e := &exportPlan{namespace: old.namespace, name: old.name, nsName: old.nsName,
			exportedFrom: maps.Clone(old.exportedFrom), declared: maps.Clone(old.declared), preferLocal: old.preferLocal}
		out = append(out, pl.resolveNew(p, e))
	}
	return out
}

// gathersAsLast says whether a plan of v gathers the exports of the last plan: the same
// spec under the Declared policy (under MemberExports, the members' ServiceExports add
// exports).
func (pl *Planner) gathersAsLast(v *ValidSpec) bool {
	return pl.spec == v && pl.last != nil && v.spec.ExportPolicy == straitv1.ExportPolicyDeclared
}

// done records a plan computed without errors: its exports, each resolved or taken
// over, and its indexes of the facts, for the next plan.
func (pl *Planner) done(v *ValidSpec, p *Plan) {
	pl.last, pl.spec, pl.indexes, pl.handoff, pl.allocations = p.exports, v, p.facts, p.handoff, p.kept
}

// lastByKey are the last plan's exports by key, for a plan that gathers its exports
// anew (resolved).
func (pl *Planner) lastByKey() map[string]*exportPlan {
	out := make(map[string]*exportPlan, len(pl.last))
	for _, e := range pl.last {
		out[e.key()] = e
	}
	return out
}

// Compute is v.Compute(observed), reusing what the last plan resolved where its inputs
// are unchanged. A plan refused (field errors) keeps nothing new.
func (pl *Planner) Compute(v *ValidSpec, observed Observed) (*Plan, field.ErrorList) {
	pl.Reused, pl.Resolved, pl.Visited, pl.Allocated = 0, 0, 0, 0
	return v.compute(observed, pl)
}

// index is the index of cluster's facts f: the last plan's while f is the same
// *MemberFacts (a planner's facts are never changed once handed over), else a new one.
func (pl *Planner) index(cluster string, f *MemberFacts) *memberIndex {
	if pl != nil {
		if x := pl.indexes[cluster]; x != nil && x.f == f {
			return x
		}
	}
	return indexFacts(f)
}

// resolved returns the resolution of e, taken over from old, the last plan's export of
// its key (if any), when its inputs are the same, else resolved now.
func (pl *Planner) resolved(p *Plan, e, old *exportPlan) *exportPlan {
	if old != nil && pl.matches(p, old, e) {
		pl.Reused++
		return old
	}
	return pl.resolveNew(p, e)
}

// resolveNew resolves e and keeps with it the versions of the facts it read.
func (pl *Planner) resolveNew(p *Plan, e *exportPlan) *exportPlan {
	pl.Resolved++
	p.resolve(e)
	k := &keptExport{from: sortedKeys(e.exportedFrom), known: true}
	visitVersions(p, e.objectKey(), k.from, func(v objectVersion) bool {
		k.versions = append(k.versions, v)
		k.known = k.known && v.known()
		return true
	})
	k.facts = make([]*MemberFacts, len(k.from))
	k.noteFacts(p)
	e.kept = k
	return e
}

// unchanged says whether the facts of p that the resolution old reads are those it was
// resolved from: without reading them when every cluster it is exported from holds
// the facts its versions were last found in, else by comparing the versions.
func (pl *Planner) unchanged(p *Plan, old *exportPlan) bool {
	k := old.kept
	if k.sameFacts(p) {
		return true
	}
	pl.Visited++
	if !k.sameVersions(p, old.objectKey()) {
		return false
	}
	k.noteFacts(p)
	return true
}

// sameFacts says whether every cluster k's export is exported from holds the facts
// k's versions were last found in, all of them known.
func (k *keptExport) sameFacts(p *Plan) bool {
	if !k.known {
		return false
	}
	for i, c := range k.from {
		if p.observed[c] != k.facts[i] {
			return false
		}
	}
	return true
}

// noteFacts records the facts of p, k's versions' now, as those its versions were found in.
func (k *keptExport) noteFacts(p *Plan) {
	for i, c := range k.from {
		k.facts[i] = p.observed[c]
	}
}

// matches says whether e, gathered from the spec and the facts of p but not resolved,
// has the inputs the resolution old was resolved from.
func (pl *Planner) matches(p *Plan, old, e *exportPlan) bool {
	if old.preferLocal != e.preferLocal || !maps.Equal(old.declared, e.declared) || !maps.Equal(old.exportedFrom, e.exportedFrom) {
		return false
	}
	return pl.unchanged(p, old)
}

// sameVersions says whether the versions of the facts of p that the resolution of the
// export key reads are those k keeps, all known.
func (k *keptExport) sameVersions(p *Plan, key types.NamespacedName) bool {
	i := 0
	same := true
	visitVersions(p, key, k.from, func(v objectVersion) bool {
		if i >= len(k.versions) || k.versions[i] != v || !v.known() {
			same = false
			return false
		}
		i++
		return true
	})
	return same && i == len(k.versions)
}

// visitVersions hands fn the versions of the facts the resolution of the export key
// from the clusters from (sorted) reads, in the order resolve reads them, until fn
// returns false.
func visitVersions(p *Plan, key types.NamespacedName, from []string, fn func(objectVersion) bool) {
	for _, c := range from {
		x := p.facts[c]
		var svc, se objectVersion
		if s := x.service(key); s != nil {
			svc = objectVersion{present: true, uid: s.UID, rv: s.ResourceVersion}
		}
		if s := x.serviceExport(key); s != nil {
			se = objectVersion{present: true, uid: s.UID, rv: s.ResourceVersion}
		}
		if !fn(svc) || !fn(se) {
			return
		}
		for i := x.firstOf(key); i >= 0; i = x.nextSlice[i] {
			s := &x.f.EndpointSlices[i]
			if !fn(objectVersion{present: true, uid: s.UID, rv: s.ResourceVersion}) {
				return
			}
		}
		if !fn(objectVersion{}) { // the cluster's close
			return
		}
	}
}
