package plan

import (
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// IPsecPSKSecretName is the Secret in each member's strait-system namespace that holds
// the IPsec pre-shared key the hub copies from the ClusterSet's pskSecretRef.
const IPsecPSKSecretName = straitv1.IPsecPSKSecretName

// IPsecPSKKey is the key of the pre-shared key, in the hub's Secret and in the members'.
const IPsecPSKKey = "psk"

// Plan is the desired state of a whole clusterset. Member objects are materialized one
// member at a time (Objects), because a large clusterset's imports are the same data
// repeated in every member.
type Plan struct {
	clusterSet types.NamespacedName
	spec       straitv1.ClusterSetSpec // defaulted
	checked    *ValidSpec              // what spec, clusterSet and byName are of
	clusters   []string                // sorted
	byName     map[string]*straitv1.ClusterSpec
	views      map[string]view
	observed   Observed
	facts      map[string]*memberIndex // per cluster, of observed
	alloc      map[string]*ClusterAllocation
	kept       map[string]*keptAllocation // alloc with what it was made from, for the planner
	exports    []*exportPlan              // sorted by namespace/name
	// digests are computed on the first MemberDigest; the hub asks from many goroutines.
	digestOnce sync.Once
	digests    *digests
	// handoff passes the digests on to the planner's next plan, which takes over what
	// they share from prior, its last plan's (nil without a planner).
	handoff, prior *digestHandoff
	// Status is the ClusterSet status the plan implies: per cluster its gateway,
	// global CIDR, connections and kube-system UID, the exports and their counts. The hub adds what it
	// alone observes while it reconciles: per cluster Connected, Ready and the
	// inventory, summary.clusters, the clusters that left, and the ClusterSet's
	// conditions.
	Status straitv1.ClusterSetStatus
}

// Compute validates cs and computes every member's desired objects from it and from the
// facts observed in the members. It returns field errors, and no plan, when cs is invalid,
// when two clusters are observed to be one, or when globalnet runs out of addresses; the
// caller then keeps members as they are.
func Compute(cs *straitv1.ClusterSet, observed Observed) (*Plan, field.ErrorList) {
	v, errs := Check(cs)
	if len(errs) > 0 {
		return nil, errs
	}
	return v.Compute(observed)
}

// Compute computes every member's desired objects from the checked spec and the facts
// observed in the members. It returns field errors, and no plan, when two clusters reach
// the same API server (their kube-system namespaces have one UID) or when globalnet runs
// out of addresses.
func (v *ValidSpec) Compute(observed Observed) (*Plan, field.ErrorList) {
	return v.compute(observed, nil)
}

// compute is Compute, with the exports' resolutions taken over from the planner's last
// plan where their inputs are unchanged (pl nil: all resolved now).
func (v *ValidSpec) compute(observed Observed, pl *Planner) (*Plan, field.ErrorList) {
	if observed == nil {
		observed = Observed{}
	}
	if errs := sameClusters(v.spec.Clusters, observed); len(errs) > 0 {
		return nil, errs
	}
	n := len(v.spec.Clusters)
	p := &Plan{
		clusterSet: v.clusterSet,
		spec:       v.spec,
		checked:    v,
		clusters:   make([]string, 0, n),
		byName:     make(map[string]*straitv1.ClusterSpec, n),
		views:      make(map[string]view, n),
		observed:   observed,
		facts:      make(map[string]*memberIndex, n),
		alloc:      make(map[string]*ClusterAllocation, n),
	}
	for i := range p.spec.Clusters {
		c := &p.spec.Clusters[i]
		p.clusters = append(p.clusters, c.Name)
		p.byName[c.Name] = c
		p.views[c.Name] = viewOf(c.PodCIDRs, c.ServiceCIDRs)
		p.facts[c.Name] = pl.index(c.Name, observed[c.Name])
	}
	sort.Strings(p.clusters)

	switch {
	case pl == nil:
		p.exports = p.planExports(func(e *exportPlan) *exportPlan { p.resolve(e); return e })
	case pl.gathersAsLast(v):
		p.exports = pl.takeOver(p)
	default:
		last := pl.lastByKey()
		p.exports = p.planExports(func(e *exportPlan) *exportPlan { return pl.resolved(p, e, last[e.key()]) })
	}
	allocated, errs := p.allocate(pl.lastAllocations())
	if len(errs) > 0 {
		return nil, errs
	}
	p.Status = p.status()
	if pl != nil {
		p.handoff, p.prior = &digestHandoff{}, pl.handoff
		pl.Allocated = allocated
		pl.done(v, p)
	}
	return p, nil
}

// Clusters are the member names, sorted.
func (p *Plan) Clusters() []string { return p.clusters }

// ServedExports are the exports that at least one cluster serves, each an import in
// every member, as "namespace/name", sorted.
func (p *Plan) ServedExports() []string {
	out := make([]string, 0, len(p.exports))
	for _, e := range p.exports {
		if len(e.sources) > 0 {
			out = append(out, e.nsName)
		}
	}
	return out
}

// Allocation is a cluster's globalnet allocation; nil without globalnet.
func (p *Plan) Allocation(cluster string) *ClusterAllocation { return p.alloc[cluster] }

// ClusterSetLabel is the value of LabelClusterSet on every object written for cs.
func ClusterSetLabel(cs types.NamespacedName) string { return cs.Namespace + "." + cs.Name }

func (p *Plan) globalnet() bool { return GlobalnetEnabled(&p.spec) }

// Objects returns every object the hub keeps in member cluster: its Membership, its
// Peers, its GlobalIngresses, its Multi-Cluster Services objects and, with the ipsec
// cable, its copy of the pre-shared key (data left to the hub). Each carries the labels
// the hub prunes by and the annotation naming its target cluster.
func (p *Plan) Objects(cluster string) []client.Object {
	return p.objects(cluster, nil)
}

// BaseGroup names, among a member's object groups (Groups), its Membership, its
// Peers and its copy of the IPsec key; every other group is one export, by
// "namespace/name".
const BaseGroup = ""

// ObjectsOf returns the objects of the named groups only (see Groups), as Objects
// builds them: a hub that knows which groups changed builds only those.
func (p *Plan) ObjectsOf(cluster string, groups map[string]bool) []client.Object {
	return p.objects(cluster, groups)
}

// objects builds the objects of the given groups, of all when groups is nil.
func (p *Plan) objects(cluster string, groups map[string]bool) []client.Object {
	if p.byName[cluster] == nil {
		return nil
	}
	exports := p.exports
	if groups != nil {
		exports = p.exportsIn(groups)
	}
	var objs []client.Object
	if groups == nil || groups[BaseGroup] {
		objs = append(objs, p.membership(cluster))
		for _, r := range p.clusters {
			if r != cluster {
				objs = append(objs, p.peer(p.views[cluster].pods, r))
			}
		}
	}
	objs = append(objs, p.globalIngresses(cluster, exports)...)
	objs = append(objs, p.mcsObjects(cluster, exports)...)
	if psk := p.ipsecPSK(); psk != nil && (groups == nil || groups[BaseGroup]) {
		objs = append(objs, psk)
	}
	for _, o := range objs {
		p.stamp(o, cluster)
	}
	return objs
}

// ServiceExportConditions returns, per ServiceExport in the member, the conditions
// (Valid, Ready, Conflict) the hub writes into its status.
// The exports are those the member's digest counts as its own (digests.involved): a
// walk of every export to find them was a millisecond at 10,000.
func (p *Plan) ServiceExportConditions(cluster string) map[types.NamespacedName][]metav1.Condition {
	out := map[types.NamespacedName][]metav1.Condition{}
	if p.byName[cluster] == nil {
		return out
	}
	p.digestOnce.Do(p.prepareDigests)
	for _, i := range p.digests.involved[cluster] {
		e := p.exports[i]
		out[types.NamespacedName{Namespace: e.namespace, Name: e.name}] = e.conditions(cluster)
	}
	return out
}

// exportsIn are the plan's exports whose groups are in groups, in the plan's order
// (by key): found by key, not by a walk of every export, as a pass over a few changed
// groups asks for them.
func (p *Plan) exportsIn(groups map[string]bool) []*exportPlan {
	at := make([]int, 0, len(groups))
	for g := range groups {
		if i, ok := slices.BinarySearchFunc(p.exports, g, func(e *exportPlan, key string) int { return strings.Compare(e.key(), key) }); ok {
			at = append(at, i)
		}
	}
	slices.Sort(at)
	out := make([]*exportPlan, len(at))
	for j, i := range at {
		out[j] = p.exports[i]
	}
	return out
}

func (p *Plan) stamp(o client.Object, cluster string) {
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[straitv1.LabelManagedBy] = straitv1.ManagedByHub
	labels[straitv1.LabelClusterSet] = ClusterSetLabel(p.clusterSet)
	o.SetLabels(labels)
	ann := o.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[straitv1.AnnotationTargetCluster] = cluster
	o.SetAnnotations(ann)
}

func (p *Plan) membership(cluster string) *straitv1.Membership {
	c := p.byName[cluster]
	m := &straitv1.Membership{
		TypeMeta:   metav1.TypeMeta{APIVersion: straitv1.GroupVersion.String(), Kind: "Membership"},
		ObjectMeta: metav1.ObjectMeta{Name: straitv1.MembershipName, Namespace: straitv1.SystemNamespace},
		Spec: straitv1.MembershipSpec{
			ClusterSet:          p.clusterSet.String(),
			ClusterID:           cluster,
			PodCIDRs:            canonicalCIDRs(c.PodCIDRs),
			ServiceCIDRs:        canonicalCIDRs(c.ServiceCIDRs),
			Cable:               straitv1.MemberCable{Driver: p.spec.Cable.Driver, Port: p.spec.Cable.Port},
			GatewayNodeSelector: c.Gateway.NodeSelector,
			GatewayEndpoint:     c.Gateway.Endpoint,
			DNS:                 p.spec.DNS,
		},
	}
	if p.spec.Cable.Driver == straitv1.CableIPsec {
		m.Spec.Cable.PSKSecretName = IPsecPSKSecretName
	}
	if a := p.alloc[cluster]; a != nil {
		m.Spec.Globalnet = &straitv1.MemberGlobalnet{GlobalCIDR: a.GlobalCIDR.String(), EgressIPs: addrStrings(a.EgressIPs)}
	}
	return m
}

// peer is what a member of pod families local routes to remote and how it reaches it:
// every member of the same families holds the same Peer.
func (p *Plan) peer(local Families, remote string) *straitv1.Peer {
	r := p.byName[remote]
	cidrs := routedCIDRs(append(canonicalCIDRs(r.PodCIDRs), canonicalCIDRs(r.ServiceCIDRs)...),
		local, p.alloc[remote])
	peer := &straitv1.Peer{
		TypeMeta: metav1.TypeMeta{APIVersion: straitv1.GroupVersion.String(), Kind: "Peer"},
		ObjectMeta: metav1.ObjectMeta{Name: remote, Namespace: straitv1.SystemNamespace,
			Labels: map[string]string{straitv1.LabelPeerCluster: remote}},
		Spec: straitv1.PeerSpec{ClusterID: remote, CIDRs: cidrs},
	}
	peer.Spec.Endpoint = peerEndpoint(r.Gateway.Endpoint, p.observed[remote])
	return peer
}

// globalIngresses are the NAT mappings the exporting cluster's gateway programs.
func (p *Plan) globalIngresses(cluster string, exports []*exportPlan) []client.Object {
	a := p.alloc[cluster]
	if a == nil {
		return nil
	}
	var out []client.Object
	for _, e := range exports {
		src := e.source(cluster)
		if src == nil {
			continue
		}
		gi := &straitv1.GlobalIngress{
			TypeMeta:   metav1.TypeMeta{APIVersion: straitv1.GroupVersion.String(), Kind: "GlobalIngress"},
			ObjectMeta: metav1.ObjectMeta{Name: GlobalIngressName(e.namespace, e.name), Namespace: straitv1.SystemNamespace},
			Spec:       straitv1.GlobalIngressSpec{ServiceName: e.name, ServiceNamespace: e.namespace},
		}
		if !src.headless {
			ip, ok := a.Services[e.key()]
			if !ok {
				continue
			}
			gi.Spec.GlobalIP = ip.String()
			gi.Spec.ServiceIP = src.clusterIPOf(corev1.IPv4Protocol)
		} else {
			for _, ep := range src.endpoints {
				ip, ok := a.Endpoints[e.key()+"/"+ep.owner] // IPv4 endpoints alone have one
				if !ok {
					continue
				}
				gi.Spec.Endpoints = append(gi.Spec.Endpoints, straitv1.GlobalEndpoint{
					GlobalIP: ip.String(), PodIP: ep.ip, PodName: ep.pod, Hostname: ep.hostname})
			}
			if len(gi.Spec.Endpoints) == 0 {
				continue
			}
		}
		out = append(out, gi)
	}
	return out
}

// IPsecPSKSource is the hub's Secret whose key IPsecPSKKey the hub copies into every
// member's IPsecPSKSecretName; nil when the cable is not ipsec.
func (p *Plan) IPsecPSKSource() *types.NamespacedName {
	if p.spec.Cable.Driver != straitv1.CableIPsec || p.spec.Cable.PSKSecretRef == nil {
		return nil
	}
	return &types.NamespacedName{Namespace: p.clusterSet.Namespace, Name: p.spec.Cable.PSKSecretRef.Name}
}

// IPsecPSK is a member's copy of the IPsec pre-shared key as Objects holds it, without
// its data; nil when the cable is not ipsec. The hub's resync check writes it alone.
func (p *Plan) IPsecPSK(cluster string) *corev1.Secret {
	s := p.ipsecPSK()
	if s == nil || p.byName[cluster] == nil {
		return nil
	}
	p.stamp(s, cluster)
	return s
}

// ipsecPSK is a member's copy of the IPsec pre-shared key, without its data: only the
// hub may read the Secret it comes from (IPsecPSKSource), so the hub fills the data in
// when it writes, and `strait render` shows the object without the key.
func (p *Plan) ipsecPSK() *corev1.Secret {
	if p.IPsecPSKSource() == nil {
		return nil
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: IPsecPSKSecretName, Namespace: straitv1.SystemNamespace},
		Type:       corev1.SecretTypeOpaque,
	}
}

// routedCIDRs is what a member of families local routes to a remote cluster of ranges
// cidrs: the ranges of the families it has (an IPv4-only member has no use for a
// dual-stack one's IPv6 ranges), and under globalnet (alloc, the remote's global CIDR) the
// global CIDR for IPv4, its IPv6 ranges routed as they are.
func routedCIDRs(cidrs []string, local Families, alloc *ClusterAllocation) []string {
	var out []string
	if alloc != nil && local.V4 {
		out = append(out, alloc.GlobalCIDR.String())
	}
	for _, c := range cidrs {
		v6 := strings.IndexByte(c, ':') >= 0
		if local.Has(v6) && (alloc == nil || v6) {
			out = append(out, c)
		}
	}
	return out
}

func canonicalCIDRs(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked().String())
		}
	}
	return out
}

func addrStrings(in []netip.Addr) []string {
	out := make([]string, len(in))
	for i, a := range in {
		out[i] = a.String()
	}
	return out
}
