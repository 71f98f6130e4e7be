package plan

// memberInputs are a member's digest (MemberDigest) and what it is made of besides the
// exports it exports: its view, its BaseGroup's digest and the sum of its view's
// remote digests.
type memberInputs struct {
	view    view
	base    uint64
	exports uint64
	digest  uint64
}

// memberDigests are every member's digest, made once a plan when its digests are
// prepared: prior's (the planner's last plan's digests, aligned with p's exports and
// gathered as they are, or nil) for a member of the same inputs whose exports are all
// unchanged (the same *exportPlan with the same inputs, which is what remoteTakenOver
// takes a remote digest over on), else computed. A one-member change leaves every
// other member's digest as it was: at 1,000 members × 10,000 exports computing them
// all was 4 ms of the 30 a change cost (BenchmarkHubScale, 2026-12-01).
func (p *Plan) memberDigests(d, prior *digests) (_ map[string]memberInputs, kept int) {
	out := make(map[string]memberInputs, len(p.clusters))
	for _, c := range p.clusters {
		v := p.views[c]
		in := memberInputs{view: v, base: d.baseDigest(p, c), exports: d.exports[v]}
		if was, ok := prior.memberOf(c); ok && was.view == in.view && was.base == in.base && was.exports == in.exports &&
			p.exportsKept(d, prior, c) {
			in.digest = was.digest
			kept++
		} else {
			in.digest = p.memberDigest(d, c, in)
		}
		out[c] = in
	}
	return out, kept
}

// memberOf is what cluster's digest was made of in d, ok false when d is nil or has
// none for it.
func (d *digests) memberOf(cluster string) (memberInputs, bool) {
	if d == nil {
		return memberInputs{}, false
	}
	in, ok := d.member[cluster]
	return in, ok
}

// exportsKept says whether every export cluster exports is prior's, with the same
// inputs: then its own digests of them are prior's too.
func (p *Plan) exportsKept(d, prior *digests, cluster string) bool {
	if len(d.inputs) != len(p.exports) || len(prior.inputs) != len(p.exports) {
		return false
	}
	for _, i := range d.involved[cluster] {
		if p.exports[i] != prior.of[i] || d.inputs[i] != prior.inputs[i] {
			return false
		}
	}
	return true
}

// memberDigest hashes a member's digest from its inputs and its own digests of the
// exports it exports, in place of their remote digests in the view's sum.
func (p *Plan) memberDigest(d *digests, cluster string, in memberInputs) uint64 {
	h := newHasher()
	h.u64(in.base)
	exports := in.exports
	for _, i := range d.involved[cluster] {
		exports += mix(p.cachedDigest(d, i, cluster, in.view)) - mix(d.remote[in.view][i])
	}
	h.u64(exports)
	return h.sum()
}
