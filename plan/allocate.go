package plan

import (
	"fmt"
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// keptAllocation is a cluster's globalnet allocation with what it was made from: the
// facts the member held (the addresses it keeps), its global CIDR, the number of egress
// IPs, and the exports it is a source of, in the plan's order. A planner's next plan
// takes it over while all of them are the same: the facts by pointer (facts handed to a
// plan are never changed, Observed) and the exports by pointer (a resolution taken over
// is the same *exportPlan, never changed either). Made anew, the allocation of every
// cluster cost a one-member change at 255 members 2.5 MB of maps and strings.
type keptAllocation struct {
	facts  *MemberFacts
	cidr   netip.Prefix
	egress int32
	served []*exportPlan
	alloc  *ClusterAllocation
}

// lastAllocations are the allocations of the planner's last plan, by cluster, and that
// plan's exports, for which each was made or kept; nil without a planner or a last plan.
func (pl *Planner) lastAllocations() (map[string]*keptAllocation, []*exportPlan) {
	if pl == nil {
		return nil, nil
	}
	return pl.allocations, pl.last
}

// allocate runs globalnet IPAM: global CIDRs, egress IPs, and global IPs for exported
// services and headless endpoints, each sticky to what members already hold. A
// cluster's allocation is last's (the planner's last plan's) where it was made from
// the same facts, CIDR, egress IPs and exports (prior: the exports of the plan last's
// allocations were made or kept for); p.kept holds every cluster's for the next plan.
// anew counts the clusters whose allocation was made anew.
func (p *Plan) allocate(last map[string]*keptAllocation, prior []*exportPlan) (anew int, errs field.ErrorList) {
	if !p.globalnet() {
		return 0, nil
	}
	held := make(map[string]netip.Prefix, len(p.clusters))
	for _, c := range p.clusters {
		held[c] = heldGlobalCIDR(p.observed[c])
	}
	cidrs, errs := allocateGlobalCIDRs(&p.spec, held)
	if len(errs) > 0 {
		return 0, errs
	}
	egress := p.spec.Globalnet.ClusterEgressIPs
	served, ok := p.servedSpliced(last, prior)
	if !ok {
		served = p.servedAnew(last)
	}
	p.kept = make(map[string]*keptAllocation, len(p.clusters))
	for _, c := range p.clusters {
		k := last[c]
		if s, changed := served[c]; k == nil || changed || k.facts != p.observed[c] || k.cidr != cidrs[c] || k.egress != egress {
			if !changed && k != nil {
				s = k.served
			}
			var lost []string
			k, lost = allocateCluster(c, p.observed[c], cidrs[c], egress, s)
			anew++
			if len(lost) > 0 {
				errs = append(errs, field.Invalid(field.NewPath("spec", "globalnet", "clusterSize"), p.spec.Globalnet.ClusterSize,
					fmt.Sprintf("cluster %s's global CIDR %s is full: %d exported services or endpoints got no global IP (first: %s)",
						c, cidrs[c], len(lost), lost[0])))
			}
		}
		p.kept[c], p.alloc[c] = k, k.alloc
	}
	return anew, errs
}

// allocateCluster makes cluster's allocation in its global CIDR cidr with egress
// egress IPs, for the exports served (those it is a source of, in the plan's order),
// keeping what the member holds (facts f). lost are the owners the CIDR had no address
// left for.
func allocateCluster(cluster string, f *MemberFacts, cidr netip.Prefix, egress int32, served []*exportPlan) (*keptAllocation, []string) {
	a := &ClusterAllocation{GlobalCIDR: cidr, EgressIPs: egressIPs(cidr, egress)}
	prev := readPrevious(f)
	services, endpoints := ingressOwners(cluster, served)
	pool := newIPPool(cidr, egress)
	// Every address still held is kept before any new one is handed out, so a new
	// export never takes an address a pod of a headless service holds; then new
	// services first: they are fewer and longer-lived than pods.
	var freshSvc, freshEp []string
	a.Services, freshSvc = keepIngress(pool, prev.services, services)
	a.Endpoints, freshEp = keepIngress(pool, prev.endpoints, endpoints)
	lost := allocateIngress(pool, a.Services, freshSvc)
	lost = append(lost, allocateIngress(pool, a.Endpoints, freshEp)...)
	return &keptAllocation{facts: f, cidr: cidr, egress: egress, served: served, alloc: a}, lost
}

// servedAnew lists, for each cluster whose exports (those among whose sources it is,
// in p's order) are not the ones its allocation in last was made for, those exports:
// with last nil, every cluster's that serves any. A cluster absent from it serves what
// its allocation in last was made for.
func (p *Plan) servedAnew(last map[string]*keptAllocation) map[string][]*exportPlan {
	at := make(map[string]int, len(last))
	out := map[string][]*exportPlan{} // the clusters that changed, each with nil first
	for _, e := range p.exports {
		for _, s := range e.sources {
			k, i := last[s.cluster], at[s.cluster]
			if k == nil || i >= len(k.served) || k.served[i] != e {
				out[s.cluster] = nil
			}
			at[s.cluster] = i + 1
		}
	}
	for c, k := range last {
		if at[c] != len(k.served) {
			out[c] = nil // serves fewer, or nothing now
		}
	}
	for _, e := range p.exports {
		for _, s := range e.sources {
			if served, changed := out[s.cluster]; changed {
				out[s.cluster] = append(served, e)
			}
		}
	}
	return out
}

// ingressOwners lists, sorted, what needs a global IP in cluster among the exports it
// serves (in key order): every exported ClusterSetIP service with an IPv4 cluster IP it
// contributes, and every ready IPv4 endpoint of every exported headless service it
// contributes (globalnet translates IPv4; IPv6 is routed as it is).
func ingressOwners(cluster string, served []*exportPlan) (services, endpoints []string) {
	for _, e := range served {
		src := e.source(cluster)
		if !src.headless {
			if src.clusterIPOf(corev1.IPv4Protocol) != "" {
				services = append(services, e.key())
			}
			continue
		}
		for _, ep := range src.endpoints {
			if (ep.ready || src.publishNotReady) && !isV6(ep.ip) {
				endpoints = append(endpoints, e.key()+"/"+ep.owner)
			}
		}
	}
	sort.Strings(endpoints)
	return services, endpoints
}
