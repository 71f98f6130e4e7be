package plan

import (
	"cmp"
	"encoding/json"
	"net/netip"
	"slices"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// MemberDigest is a hash of everything the plan wants in member cluster: what Objects
// and ServiceExportConditions return for it (the IPsec key's data aside, which the hub
// fills in). Two plans with the same digest for a cluster want the same there, so the
// hub skips a member whose digest is what it last applied. It costs far less than
// Objects: the parts every member shares (each export as a cluster that does not
// export it sees it, each peer) are hashed once per plan and combined per member, and
// only the exports a member takes part in are hashed for it alone.
func (p *Plan) MemberDigest(cluster string) uint64 {
	if p.byName[cluster] == nil {
		return 0
	}
	p.digestOnce.Do(p.prepareDigests)
	return p.digests.member[cluster].digest
}

// baseDigest hashes a member's BaseGroup: the ClusterSet, the member, its Membership,
// the IPsec key's Secret and every peer but itself.
func (d *digests) baseDigest(p *Plan, cluster string) uint64 {
	h := newHasher()
	h.u64(d.own[cluster].digest)
	f := p.views[cluster].pods
	h.u64(d.peers[f] - mix(d.peer[f][cluster]))
	return h.sum()
}

// ownDigest hashes what a member's BaseGroup holds of its own: the ClusterSet, the
// member, its Membership and the IPsec key's Secret.
func (p *Plan) ownDigest(cluster string) uint64 {
	h := newHasher()
	h.str(ClusterSetLabel(p.clusterSet))
	h.str(cluster)
	h.json(p.membership(cluster))
	if psk := p.ipsecPSK(); psk != nil {
		h.json(psk)
	}
	return h.sum()
}

// peerInputs are what a cluster's Peer (Plan.peer) is made of besides the checked spec:
// the member's facts (handed to a plan, never changed) and its global CIDR.
type peerInputs struct {
	facts  *MemberFacts
	global netip.Prefix
}

// ownInputs are what a member's own digest (ownDigest) is made of besides the checked
// spec: its globalnet allocation's CIDR and egress IPs.
type ownInputs struct {
	global netip.Prefix
	egress []netip.Addr
	digest uint64
}

func (p *Plan) peerInputs(cluster string) peerInputs {
	in := peerInputs{facts: p.observed[cluster]}
	if a := p.alloc[cluster]; a != nil {
		in.global = a.GlobalCIDR
	}
	return in
}

// ownOf is cluster's own digest with its inputs: last's (nil, or of the same checked
// spec) when it was of the same allocation (a one-member change leaves every other
// member's as it was; at 1,000 members encoding each Membership anew was some 20 µs a
// member a plan), else computed.
func (p *Plan) ownOf(cluster string, last *digests) ownInputs {
	in := ownInputs{}
	if a := p.alloc[cluster]; a != nil {
		in.global, in.egress = a.GlobalCIDR, a.EgressIPs
	}
	if last != nil {
		// A member without an allocation has neither a global CIDR nor egress IPs.
		if was, ok := last.own[cluster]; ok && was.global == in.global && slices.Equal(was.egress, in.egress) {
			return was
		}
	}
	in.digest = p.ownDigest(cluster)
	return in
}

// Groups are a member's object groups and their digests: what MemberDigest covers,
// split into BaseGroup (the Membership, the Peers, the IPsec key's Secret) and each
// export ("namespace/name": its ServiceExport and conditions, ServiceImport,
// EndpointSlices and GlobalIngress). A hub that kept the groups of its last pass over a
// member rebuilds only those that differ.
type Groups struct {
	// Keys are the groups, sorted: BaseGroup first, then every export's. One slice per
	// plan, shared by all its members' Groups: not to be changed.
	Keys []string
	base uint64
	// shared[i] is Keys[1+i]'s digest as a member of the view that does not export it
	// holds it: one slice per view and plan, shared by its members. own are the
	// exports the member takes part in, by their index in Keys, sorted: a member's
	// groups cost a few numbers, not 8 bytes an export (80 MB at 1,000 members ×
	// 10,000 exports).
	shared []uint64
	own    []ownGroup
}

// ownGroup is a group whose digest is the member's own: an export it exports.
type ownGroup struct {
	key    int // index in Groups.Keys
	digest uint64
}

// GroupsOf are groups given whole: digests[i] is keys[i]'s.
func GroupsOf(keys []string, digests []uint64) Groups {
	if len(keys) == 0 {
		return Groups{}
	}
	return Groups{Keys: keys, base: digests[0], shared: digests[1:]}
}

// Digest is the digest of group Keys[i].
func (g Groups) Digest(i int) uint64 {
	if i == 0 {
		return g.base
	}
	if j, ok := slices.BinarySearchFunc(g.own, i, func(o ownGroup, i int) int { return cmp.Compare(o.key, i) }); ok {
		return g.own[j].digest
	}
	return g.shared[i-1]
}

// WithBase is g with x mixed into its BaseGroup's digest: the hub counts there the
// IPsec key it fills in.
func (g Groups) WithBase(x uint64) Groups {
	g.base ^= x
	return g
}

// Groups returns cluster's groups and their digests, where the hub keeps them for
// every member between passes.
func (p *Plan) Groups(cluster string) Groups {
	if p.byName[cluster] == nil {
		return Groups{}
	}
	p.digestOnce.Do(p.prepareDigests)
	d := p.digests
	v := p.views[cluster]
	out := Groups{Keys: d.keys, base: d.member[cluster].base, shared: d.remote[v]}
	if in := d.involved[cluster]; len(in) > 0 {
		out.own = make([]ownGroup, len(in))
		for j, i := range in {
			out.own[j] = ownGroup{key: 1 + i, digest: p.cachedDigest(d, i, cluster, v)}
		}
	}
	return out
}

// digests are the per-plan parts of MemberDigest.
type digests struct {
	keys []string // BaseGroup, then every export's key (Groups.Keys)
	// peer[f][c]: remote cluster c's Peer object as every other member of pod families f
	// holds it; peers[f] the sum of mix(peer[f]) over all clusters.
	peer  map[Families]map[string]uint64
	peers map[Families]uint64
	// spec is the checked spec of the plan the digests are of; peerIn what each
	// cluster's Peer was made of besides it, and own each member's own digest
	// (ownDigest) with what it was made of: the planner's next plan takes over those
	// whose inputs are the same.
	spec   *ValidSpec
	peerIn map[string]peerInputs
	own    map[string]ownInputs
	// remote[v][i]: export i as a cluster of view v that does not export it sees it.
	remote   map[view][]uint64
	exports  map[view]uint64  // per view, sum of mix(remote[v])
	involved map[string][]int // cluster -> the exports it exports (they have conditions, its own view)
	// member: each member's MemberDigest and what it was made of (memberDigests).
	member      map[string]memberInputs
	membersKept int // of them prior's
	// inputs[i]: digestInputs of export i, if a planner keeps its digests, and alloc
	// the allocations they read (the plan's).
	inputs []uint64
	alloc  map[string]*ClusterAllocation
	// of are the plan's exports, which the others are aligned with: the next plan of
	// the planner takes over what they share with its own (prepareDigests).
	of []*exportPlan
}

// digestHandoff hands a plan's digests, once prepared, to the planner's next plan,
// which takes over the remote digests of the exports that did not change and their
// sums, and the keys and involved clusters when no export came or went or moved: at
// 10,000 exports, looking every remote digest up and adding them anew was some 8% of
// the planner's part of a one-member change (BenchmarkPlannerOneChangeDigests, 17.0 to
// 15.5 ms). The plans may be asked for digests from other goroutines.
type digestHandoff struct{ d atomic.Pointer[digests] }

func (h *digestHandoff) load() *digests {
	if h == nil {
		return nil
	}
	return h.d.Load()
}

func (h *digestHandoff) store(d *digests) {
	if h != nil {
		h.d.Store(d)
	}
}

func (p *Plan) prepareDigests() {
	d := &digests{peer: map[Families]map[string]uint64{}, peers: map[Families]uint64{}, remote: map[view][]uint64{},
		exports: map[view]uint64{}, involved: map[string][]int{}, spec: p.checked,
		peerIn: make(map[string]peerInputs, len(p.clusters)), own: make(map[string]ownInputs, len(p.clusters))}
	prior := p.prior.load()
	p.prior = nil // nothing older stays reachable through this plan
	last := prior
	if last != nil && last.spec != p.checked {
		last = nil // another spec: the Peers and Memberships are made anew
	}
	for _, c := range p.clusters {
		d.peerIn[c] = p.peerInputs(c)
		d.own[c] = p.ownOf(c, last)
	}
	for _, local := range p.clusters {
		f := p.views[local].pods
		if _, done := d.peer[f]; done {
			continue
		}
		d.peer[f] = make(map[string]uint64, len(p.clusters))
		for _, c := range p.clusters {
			d.peer[f][c] = p.peerDigest(d, last, f, c)
			d.peers[f] += mix(d.peer[f][c])
		}
	}
	// Once per export, not per view and member: what its kept digests were computed
	// from besides its resolution (a planner's plan's alone keeps any).
	d.of = p.exports
	if p.handoff != nil {
		d.inputs, d.alloc = make([]uint64, len(p.exports)), p.alloc
		var buf []byte
		moved := p.allocationsMoved(prior)
		for i, e := range p.exports {
			if was, ok := p.inputsTakenOver(prior, moved, i); ok {
				d.inputs[i] = was
				continue
			}
			d.inputs[i], buf = p.digestInputs(e, buf)
		}
	}
	if prior != nil && len(prior.of) != len(p.exports) {
		prior = nil // not aligned: exports came or went
	}
	for _, c := range p.clusters {
		v := p.views[c]
		if _, done := d.remote[v]; done {
			continue
		}
		if prior != nil && prior.remote[v] != nil {
			d.remote[v], d.exports[v] = p.remoteTakenOver(d, prior, v)
			continue
		}
		remote := make([]uint64, len(p.exports))
		for i := range p.exports {
			remote[i] = p.cachedDigest(d, i, "", v)
			d.exports[v] += mix(remote[i])
		}
		d.remote[v] = remote
	}
	if !p.groupsOf(d, prior) {
		prior = nil // the members' exports are found anew
	}
	d.member, d.membersKept = p.memberDigests(d, prior)
	p.digests = d
	p.handoff.store(d)
}

// peerDigest is the digest of cluster c's Peer as members of pod families f hold it:
// last's when it was made of the same inputs (d.peerIn[c]), else hashed anew.
func (p *Plan) peerDigest(d, last *digests, f Families, c string) uint64 {
	if last != nil && last.peerIn[c] == d.peerIn[c] {
		if was, ok := last.peer[f][c]; ok {
			return was
		}
	}
	h := newHasher()
	h.json(p.peer(f, c))
	return h.sum()
}

// groupsOf sets d's keys and involved clusters: prior's when p's exports have the
// same keys and clusters as prior's (gathersAs), else found anew.
func (p *Plan) groupsOf(d, prior *digests) (takenOver bool) {
	if prior != nil && p.gathersAs(prior) {
		d.keys, d.involved = prior.keys, prior.involved
		return true
	}
	d.keys = make([]string, 1, 1+len(p.exports))
	d.keys[0] = BaseGroup
	for i, e := range p.exports {
		d.keys = append(d.keys, e.key())
		if e.kept != nil { // its clusters sorted already, without a walk of the map
			for _, c := range e.kept.from {
				d.involved[c] = append(d.involved[c], i)
			}
			continue
		}
		for c := range e.exportedFrom {
			d.involved[c] = append(d.involved[c], i)
		}
	}
	return false
}

// remoteTakenOver are the remote digests of view v and their sum: prior's (the
// planner's last plan's, aligned with p's exports) where p has the same export
// (the same *exportPlan) with the same inputs, and the sum set right for the others.
func (p *Plan) remoteTakenOver(d, prior *digests, v view) ([]uint64, uint64) {
	remote, sum := slices.Clone(prior.remote[v]), prior.exports[v]
	for i, e := range p.exports {
		if e == prior.of[i] && d.inputs[i] == prior.inputs[i] {
			continue
		}
		r := p.cachedDigest(d, i, "", v)
		sum += mix(r) - mix(remote[i])
		remote[i] = r
	}
	return remote, sum
}

// gathersAs says whether p's exports, aligned with prior's, have the same keys and
// clusters they are exported from: then prior's keys and involved clusters are p's.
func (p *Plan) gathersAs(prior *digests) bool {
	for i, e := range p.exports {
		old := prior.of[i]
		if e == old {
			continue
		}
		if e.key() != old.key() || e.kept == nil || old.kept == nil || !slices.Equal(e.kept.from, old.kept.from) {
			return false
		}
	}
	return true
}

// cachedDigest is exportDigest of export i for cluster of view v, taken from the
// planner's last plans when its resolution was taken over from them (whose inputs
// include the ServiceExport's version in each cluster it is exported from) and what
// else the digest reads is the same (d.inputs). The hub asks for every export's
// digests at every plan; a change touches a few.
func (p *Plan) cachedDigest(d *digests, i int, cluster string, v view) uint64 {
	e := p.exports[i]
	k := e.kept
	if k == nil {
		return p.exportDigest(e, cluster, v)
	}
	inputs := d.inputs[i]
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range k.digests {
		if r.cluster == cluster && r.view == v && r.inputs == inputs {
			return r.digest
		}
	}
	digest := p.exportDigest(e, cluster, v)
	k.digests = append(slices.DeleteFunc(k.digests, func(r keptDigest) bool { return r.cluster == cluster && r.view == v }),
		keptDigest{cluster: cluster, view: v, inputs: inputs, digest: digest})
	return digest
}

// digestInputs hashes what exportDigest reads of e besides its resolution and the
// member's view: each source cluster's families and its globalnet allocations for e,
// as hashSource reads them. buf is scratch space for the endpoints' allocation keys,
// returned for the next call: a string made per endpoint would be garbage per plan.
func (p *Plan) digestInputs(e *exportPlan, buf []byte) (uint64, []byte) {
	h := newHasher()
	for _, s := range e.sources {
		f := p.views[s.cluster].pods
		h.bool(f.V4)
		h.bool(f.V6)
		a := p.alloc[s.cluster]
		h.bool(a != nil)
		if a == nil {
			continue
		}
		h.addr(a.Services[e.key()])
		buf = append(append(buf[:0], e.key()...), '/')
		n := len(buf)
		for _, ep := range s.endpoints {
			buf = append(buf[:n], ep.owner...)
			h.addr(a.Endpoints[string(buf)])
		}
	}
	return h.sum(), buf
}

// inputsTakenOver are prior's digestInputs of export i when prior's export i is the
// same resolution and was read with the same views and allocations: prior of the same
// spec, and none of its source clusters among moved (allocationsMoved). Hashed anew,
// 10,000 exports' inputs cost 10 ms a plan.
func (p *Plan) inputsTakenOver(prior *digests, moved map[string]bool, i int) (uint64, bool) {
	if prior == nil || prior.spec != p.checked || i >= len(prior.of) || i >= len(prior.inputs) || prior.of[i] != p.exports[i] {
		return 0, false
	}
	if len(moved) > 0 {
		for _, s := range p.exports[i].sources {
			if moved[s.cluster] {
				return 0, false
			}
		}
	}
	return prior.inputs[i], true
}

// allocationsMoved are the clusters whose allocation is not prior's (one taken over,
// keptAllocation, is the same): found once a plan, not once an export's source, which
// cost 2.7 ms a change at 10,000 exports and 1,000 members.
func (p *Plan) allocationsMoved(prior *digests) map[string]bool {
	if prior == nil {
		return nil
	}
	moved := map[string]bool{}
	for c, a := range p.alloc {
		if prior.alloc[c] != a {
			moved[c] = true
		}
	}
	for c, a := range prior.alloc {
		if p.alloc[c] != a {
			moved[c] = true
		}
	}
	return moved
}

// keptDigest is one of an export's digests, kept with its resolution
// (keptExport.digests): as cluster ("": any that does not export it) of view holds it,
// from the inputs beside the resolution it read.
type keptDigest struct {
	cluster string
	view    view
	inputs  uint64
	digest  uint64
}

// exportDigest is everything about export e that member cluster, of view v, holds: its
// ServiceExport and conditions when it exports it, the ServiceImport, the EndpointSlices
// per source (its own as it sees itself), and its GlobalIngress. Cluster "" is any
// member of view v that does not export e.
func (p *Plan) exportDigest(e *exportPlan, cluster string, v view) uint64 {
	h := newHasher()
	h.bool(v.pods.V4)
	h.bool(v.pods.V6)
	h.bool(v.services.V4)
	h.bool(v.services.V6)
	h.str(e.namespace)
	h.str(e.name)
	if cluster != "" && e.exportedFrom[cluster] {
		h.bool(e.declared[cluster])
		// The hub stamps the conditions with the ServiceExport's generation.
		if se := p.facts[cluster].serviceExport(e.objectKey()); se != nil {
			h.u64(uint64(se.Generation))
		}
		for _, c := range e.conditions(cluster) {
			h.str(c.Type)
			h.str(string(c.Status))
			h.str(c.Reason)
			h.str(c.Message)
		}
	}
	h.str(string(e.typ))
	h.bool(e.preferLocal)
	h.importPorts(e.ports)
	e.props.hash(h)
	h.u64(uint64(len(e.sources)))
	for _, s := range e.sources {
		p.hashSource(h, e, s, s.cluster == cluster)
	}
	return h.sum()
}

// hashSource hashes what a member holds of source s: all of it in the source itself
// or without globalnet; under globalnet the other members see only the global IPs of
// IPv4, which is why a new IPv4 cluster IP or pod IP changes the exporting member alone
// (IPv6 is routed as it is, so its addresses count for every member).
func (p *Plan) hashSource(h *hasher, e *exportPlan, s *exportSource, own bool) {
	alloc := p.alloc[s.cluster]
	whole := own || alloc == nil
	h.str(s.cluster)
	h.bool(p.views[s.cluster].pods.V4)
	h.bool(p.views[s.cluster].pods.V6)
	h.bool(whole)
	h.bool(s.headless)
	h.bool(s.publishNotReady)
	h.bool(s.anyReady)
	h.servicePorts(s.ports)
	h.endpointPorts(s.targetPorts)
	// Under globalnet another member sees IPv4 as global IPs, IPv6 as it is.
	if whole || isV6(s.clusterIP) {
		h.str(s.clusterIP)
	}
	h.u64(uint64(len(s.clusterIPs)))
	for _, ip := range s.clusterIPs {
		if whole || isV6(ip) {
			h.str(ip)
		}
	}
	if alloc != nil {
		h.addr(alloc.Services[e.key()])
	}
	h.u64(uint64(len(s.endpoints)))
	for _, ep := range s.endpoints {
		h.bool(ep.ready)
		h.str(ep.hostname)
		if whole || isV6(ep.ip) {
			h.str(ep.ip)
			h.str(ep.pod)
			h.str(ep.owner)
		}
		if alloc != nil {
			h.addr(alloc.Endpoints[e.key()+"/"+ep.owner])
		}
	}
}

// hasher is FNV-64a over length-prefixed fields, so that no two field sequences run
// together into the same bytes. It is written out rather than taken from hash/fnv so
// that hashing a string costs no allocation: the hub hashes every export per reconcile.
type hasher struct{ s uint64 }

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func newHasher() *hasher { return &hasher{s: fnvOffset} }

func (h *hasher) sum() uint64 { return h.s }

func (h *hasher) u64(v uint64) {
	for i := range 8 {
		h.s ^= (v >> (8 * i)) & 0xff
		h.s *= fnvPrime
	}
}

func (h *hasher) bytes(b []byte) {
	h.u64(uint64(len(b)))
	for _, c := range b {
		h.s ^= uint64(c)
		h.s *= fnvPrime
	}
}

func (h *hasher) str(s string) {
	h.u64(uint64(len(s)))
	for i := 0; i < len(s); i++ {
		h.s ^= uint64(s[i])
		h.s *= fnvPrime
	}
}

func (h *hasher) bool(b bool) {
	if b {
		h.u64(1)
	} else {
		h.u64(0)
	}
}

// addr hashes a's binary form (MarshalBinary's), made on the stack.
func (h *hasher) addr(a netip.Addr) {
	var buf [16]byte
	b, _ := a.AppendBinary(buf[:0])
	h.bytes(b)
}

func (h *hasher) optStr(s *string) {
	h.bool(s != nil)
	if s != nil {
		h.str(*s)
	}
}

// json hashes an object's serialization: for the few objects per member that are
// cheaper to hash whole than field by field.
func (h *hasher) json(v any) {
	data, _ := json.Marshal(v)
	h.bytes(data)
}

func (h *hasher) importPorts(ports []mcsv1.ServicePort) {
	h.u64(uint64(len(ports)))
	for _, sp := range ports {
		h.port(sp.Name, sp.Protocol, sp.AppProtocol, sp.Port)
	}
}

// port hashes what an import's port and a Service's have in common.
func (h *hasher) port(name string, protocol corev1.Protocol, appProtocol *string, port int32) {
	h.str(name)
	h.str(string(protocol))
	h.optStr(appProtocol)
	h.u64(uint64(port))
}

func (h *hasher) servicePorts(ports []corev1.ServicePort) {
	h.u64(uint64(len(ports)))
	for _, sp := range ports {
		h.port(sp.Name, sp.Protocol, sp.AppProtocol, sp.Port)
		h.str(sp.TargetPort.String())
		h.u64(uint64(sp.NodePort))
	}
}

func (h *hasher) endpointPorts(ports []discoveryv1.EndpointPort) {
	h.u64(uint64(len(ports)))
	for _, ep := range ports {
		h.optStr(ep.Name)
		h.bool(ep.Protocol != nil)
		if ep.Protocol != nil {
			h.str(string(*ep.Protocol))
		}
		h.bool(ep.Port != nil)
		if ep.Port != nil {
			h.u64(uint64(*ep.Port))
		}
		h.optStr(ep.AppProtocol)
	}
}

// mix spreads a hash over all 64 bits (splitmix64's finalizer) before it is summed, so
// that sums of similar hashes do not cancel.
func mix(v uint64) uint64 {
	v ^= v >> 30
	v *= 0xbf58476d1ce4e5b9
	v ^= v >> 27
	v *= 0x94d049bb133111eb
	v ^= v >> 31
	return v
}

// hash hashes the import properties: the ServiceImport and the derived Service carry
// them.
func (pr *importProps) hash(h *hasher) {
	h.str(string(pr.sessionAffinity))
	h.json(pr.sessionAffinityConfig)
	h.u64(uint64(len(pr.ipFamilies)))
	for _, f := range pr.ipFamilies {
		h.str(string(f))
	}
	h.json(pr.internalTraffic)
	h.optStr(pr.trafficDistribution)
	h.json(pr.labels)
	h.json(pr.annotations)
}
