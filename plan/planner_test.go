package plan

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// TestPlannerEqualsCompute: through random changes to random ClusterSets and to what
// their members hold (services added, removed, retyped, re-ported; endpoints, slices and
// ServiceExports changed; gateways moved; exports declared, moved and dropped in the spec), the
// Planner's plan after each change equals Compute's: every member's objects, its
// digest and group digests, its ServiceExports' conditions, and the status. A member
// whose facts did not change comes as the same *MemberFacts, as the hub hands them, or
// now and then as a new one with the same content. And it does reuse: a change
// resolves again only what it touched, and with every member's facts the same pointer
// it compares no versions.
func TestPlannerEqualsCompute(t *testing.T) {
	for seed := range randomWorlds() {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			w := newRandomWorld(seed)
			pl := NewPlanner()
			reused, takenOver, allocationsKept, digestsKept := 0, 0, 0, 0
			var prev *Plan
			var prevSpec *straitv1.ClusterSetSpec
			var generation int64
			refused := false
			for step := range 60 {
				what := "nothing"
				if step > 0 {
					what = w.change()
				}
				cs, obs := w.clusterSet(), w.observed()
				// As an API server: a new generation for every change of the spec.
				if prevSpec == nil || !apiequality.Semantic.DeepEqual(*prevSpec, cs.Spec) {
					generation++
				}
				prevSpec = cs.Spec.DeepCopy()
				cs.UID, cs.Generation = types.UID(fmt.Sprintf("uid-%d", seed)), generation
				want0, errs := Check(cs)
				if len(errs) > 0 {
					t.Fatalf("step %d (%s): the random ClusterSet is invalid: %v", step, what, errs.ToAggregate())
				}
				v, errs := pl.Check(cs)
				if len(errs) > 0 {
					t.Fatalf("step %d (%s): the planner's Check refused what Check took: %v", step, what, errs.ToAggregate())
				}
				if pl.gathersAsLast(v) {
					takenOver++
				}
				want, wantErrs := want0.Compute(obs)
				got, gotErrs := pl.Compute(v, obs)
				if fmt.Sprint(gotErrs) != fmt.Sprint(wantErrs) {
					t.Fatalf("step %d (%s): planner errors %v, Compute's %v", step, what, gotErrs, wantErrs)
				}
				if step > 0 && !refused && len(w.handedAnew) == 0 && pl.Visited > 0 {
					t.Fatalf("step %d (%s): every member's facts were the last plan's, but %d exports' versions were compared", step, what, pl.Visited)
				}
				if what == "nothing" && step > 0 && !refused && len(w.handedAnew) == 0 && pl.Allocated > 0 {
					t.Fatalf("step %d: nothing changed and every member's facts were the last plan's, but %d clusters were allocated anew", step, pl.Allocated)
				}
				refused = want == nil
				if want == nil {
					continue
				}
				w.plans = append(w.plans, want)
				if len(w.plans) > 5 {
					w.plans = w.plans[1:]
				}
				if w.globalnet && step > 0 {
					allocationsKept += len(w.clusters) - pl.Allocated
				}
				if d := planDifference(want, got); d != "" {
					t.Fatalf("step %d (%s): the planner's plan differs from Compute's: %s", step, what, d)
				}
				digestsKept += got.digests.membersKept
				if d := digestMissed(prev, want); d != "" {
					t.Fatalf("step %d (%s): %s", step, what, d)
				}
				prev = want
				if what == "nothing" && step > 0 && pl.Resolved > 0 {
					t.Fatalf("step %d: nothing changed but %d exports were resolved again", step, pl.Resolved)
				}
				reused += pl.Reused
			}
			if reused == 0 {
				t.Fatal("the planner never reused a resolution")
			}
			if takenOver == 0 && w.policy == straitv1.ExportPolicyDeclared {
				t.Fatal("no plan took the last plan's exports over, though some had its spec")
			}
			if w.globalnet && allocationsKept == 0 {
				t.Fatal("no plan took a cluster's globalnet allocation over")
			}
			if takenOver > 0 && digestsKept == 0 {
				t.Fatal("no plan took a member's digest over from the last, though some took its exports over")
			}
		})
	}
}

// TestPlannerResolvesObjectsWithoutVersions: facts without a resourceVersion (written
// by hand, as `strait render --observed` reads them) are never taken as unchanged: only
// an export whose clusters hold none of its objects can be reused.
func TestPlannerResolvesObjectsWithoutVersions(t *testing.T) {
	w := newRandomWorld(7)
	obs := w.observed()
	for _, f := range obs {
		for i := range f.Services {
			f.Services[i].ResourceVersion = ""
		}
		for i := range f.EndpointSlices {
			f.EndpointSlices[i].ResourceVersion = ""
		}
		for i := range f.ServiceExports {
			f.ServiceExports[i].ResourceVersion = ""
		}
	}
	v, errs := Check(w.clusterSet())
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	pl := NewPlanner()
	for range 2 {
		if _, errs := pl.Compute(v, obs); len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
	}
	empty := 0
	for k := range w.exports {
		held := false
		for _, c := range w.declaredIn(k) {
			held = held || w.services[c][k] != nil || w.sexports[c][k] != nil || len(w.slices[c][k]) > 0
		}
		if !held {
			empty++
		}
	}
	if pl.Reused > empty || pl.Resolved == 0 {
		t.Errorf("the second plan reused %d exports and resolved %d again, want at most the %d whose clusters hold none of their objects reused",
			pl.Reused, pl.Resolved, empty)
	}
}

// digestMissed names a member whose objects or ServiceExport conditions differ between
// two plans while its digest stays the same (the hub would skip it), "" if none.
func digestMissed(before, after *Plan) string {
	if before == nil {
		return ""
	}
	for _, c := range after.Clusters() {
		if before.MemberDigest(c) != after.MemberDigest(c) {
			continue
		}
		a, _ := json.Marshal([]any{before.Objects(c), before.ServiceExportConditions(c)})
		b, _ := json.Marshal([]any{after.Objects(c), after.ServiceExportConditions(c)})
		if string(a) != string(b) {
			return fmt.Sprintf("%s's digest stayed %x while its objects changed:\nbefore %s\nafter  %s", c, after.MemberDigest(c), a, b)
		}
	}
	return ""
}

// planDifference names the first part in which two plans differ, "" if none.
func planDifference(want, got *Plan) string {
	js := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			return err.Error()
		}
		return string(b)
	}
	if a, b := js(want.Status), js(got.Status); a != b {
		return fmt.Sprintf("status:\nwant %s\ngot  %s", a, b)
	}
	if a, b := want.ServedExports(), got.ServedExports(); !slices.Equal(a, b) {
		return fmt.Sprintf("served exports: want %v, got %v", a, b)
	}
	for _, c := range want.Clusters() {
		// What a pass over some groups applies (the hub's partial pass): each group
		// alone, and every other one at once.
		keys := want.Groups(c).Keys
		some := map[string]bool{}
		for i, k := range keys {
			if a, b := js(want.ObjectsOf(c, map[string]bool{k: true})), js(got.ObjectsOf(c, map[string]bool{k: true})); a != b {
				return fmt.Sprintf("%s's objects of group %s:\nwant %s\ngot  %s", c, k, a, b)
			}
			if i%2 == 1 {
				some[k] = true
			}
		}
		if a, b := js(want.ObjectsOf(c, some)), js(got.ObjectsOf(c, some)); a != b {
			return fmt.Sprintf("%s's objects of groups %v:\nwant %s\ngot  %s", c, some, a, b)
		}
		if a, b := js(want.Objects(c)), js(got.Objects(c)); a != b {
			return fmt.Sprintf("%s's objects:\nwant %s\ngot  %s", c, a, b)
		}
		if a, b := want.MemberDigest(c), got.MemberDigest(c); a != b {
			return fmt.Sprintf("%s's digest: want %x, got %x", c, a, b)
		}
		if a, b := want.Groups(c), got.Groups(c); !reflect.DeepEqual(a, b) {
			return fmt.Sprintf("%s's group digests: want %v, got %v", c, a, b)
		}
		if a, b := js(want.ServiceExportConditions(c)), js(got.ServiceExportConditions(c)); a != b {
			return fmt.Sprintf("%s's ServiceExport conditions:\nwant %s\ngot  %s", c, a, b)
		}
	}
	return ""
}

// randomWorld is a ClusterSet and what its members hold, changed at random. Every
// object carries a UID and a resourceVersion that changes with it, as an API server's.
type randomWorld struct {
	rng       *rand.Rand
	rv        int
	globalnet bool
	policy    straitv1.ExportPolicy
	clusters  []string
	// families are each cluster's, by index: IPv4 alone in half the worlds, in the
	// others a mix of dual-stack members with IPv4-only or (without globalnet) IPv6-only
	// ones.
	families []Families
	keys     []types.NamespacedName
	// exports are the spec's, by key: the clusters declared (none: all), and PreferLocal.
	exports  map[types.NamespacedName]*straitv1.ExportSpec
	services map[string]map[types.NamespacedName]*corev1.Service
	slices   map[string]map[types.NamespacedName][]*discoveryv1.EndpointSlice
	sexports map[string]map[types.NamespacedName]*mcsv1.ServiceExport
	// facts are the facts observed handed out last, by cluster; touched the clusters
	// changed since, which observed hands new facts; handedAnew the clusters it handed
	// new facts last time.
	facts      map[string]*MemberFacts
	touched    map[string]bool
	handedAnew []string
	// moves are how often each cluster's gateway moved to another address.
	moves map[string]int
	// Under globalnet, clusterSize is the spec's (0: the default), small in some worlds
	// so that a cluster's global CIDR runs full; held are the Membership and the
	// GlobalIngresses a member holds, those a plan gave it (hold), pinned the clusters
	// whose global CIDR the spec pins (pin), and plans the last
	// few plans computed, the latest last.
	clusterSize int32
	pinned      map[string]bool
	held        map[string]*MemberFacts
	plans       []*Plan
}

func newRandomWorld(seed uint64) *randomWorld { return newRandomWorldOf(seed, 12) }

// newRandomWorldOf is a random world of keys exports' names (12 in most tests: enough
// for every rule, small enough for 40 worlds of 60 plans).
func newRandomWorldOf(seed uint64, keys int) *randomWorld {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	w := &randomWorld{rng: rng, globalnet: rng.IntN(2) == 0, policy: straitv1.ExportPolicyDeclared,
		exports:  map[types.NamespacedName]*straitv1.ExportSpec{},
		services: map[string]map[types.NamespacedName]*corev1.Service{},
		slices:   map[string]map[types.NamespacedName][]*discoveryv1.EndpointSlice{},
		sexports: map[string]map[types.NamespacedName]*mcsv1.ServiceExport{},
		facts:    map[string]*MemberFacts{}, touched: map[string]bool{}, moves: map[string]int{}, held: map[string]*MemberFacts{},
		pinned: map[string]bool{}}
	if rng.IntN(3) == 0 {
		w.policy = straitv1.ExportPolicyMemberExports
	}
	if w.globalnet && rng.IntN(3) == 0 {
		// 6 global IPs after the reserved one, the 8 egress IPs and the last: a plan
		// is refused now and then (a cluster's CIDR is full), and the planner goes on from
		// its last good one.
		w.clusterSize = 16
	}
	mixed, v6only := rng.IntN(2) == 0, !w.globalnet && rng.IntN(2) == 0
	for i := range 2 + rng.IntN(4) {
		c := fmt.Sprintf("c%d", i)
		w.clusters = append(w.clusters, c)
		f := Families{V4: true}
		switch {
		case mixed && rng.IntN(3) == 0:
			f = Families{V4: true, V6: true}
		case mixed && v6only:
			f = Families{V6: true}
		}
		w.families = append(w.families, f)
		w.services[c] = map[types.NamespacedName]*corev1.Service{}
		w.slices[c] = map[types.NamespacedName][]*discoveryv1.EndpointSlice{}
		w.sexports[c] = map[types.NamespacedName]*mcsv1.ServiceExport{}
	}
	for i := range keys {
		w.keys = append(w.keys, types.NamespacedName{Namespace: fmt.Sprintf("ns%d", i%3), Name: fmt.Sprintf("svc%d", i)})
	}
	for _, k := range w.keys {
		if rng.IntN(3) > 0 {
			w.declare(k)
		}
		for _, c := range w.clusters {
			if rng.IntN(3) > 0 {
				w.putService(c, k)
			}
			if w.policy == straitv1.ExportPolicyMemberExports && rng.IntN(4) == 0 {
				w.putServiceExport(c, k, false)
			}
		}
	}
	return w
}

func (w *randomWorld) version() string { w.rv++; return fmt.Sprint(w.rv) }

func (w *randomWorld) pick(n int) int { return w.rng.IntN(n) }

func (w *randomWorld) declare(k types.NamespacedName) {
	e := &straitv1.ExportSpec{Namespace: k.Namespace, Name: k.Name}
	for _, c := range w.clusters {
		if w.rng.IntN(2) == 0 {
			e.Clusters = append(e.Clusters, c)
		}
	}
	if w.rng.IntN(4) == 0 {
		e.ClusterSetIP = straitv1.ClusterSetIPPreferLocal
	}
	w.exports[k] = e
	for _, c := range w.declaredIn(k) {
		if w.sexports[c][k] == nil || w.rng.IntN(2) == 0 {
			w.putServiceExport(c, k, true)
		}
	}
}

// declaredIn are the clusters the spec declares k in.
func (w *randomWorld) declaredIn(k types.NamespacedName) []string {
	e := w.exports[k]
	if e == nil {
		return nil
	}
	if len(e.Clusters) == 0 {
		return w.clusters
	}
	return e.Clusters
}

func (w *randomWorld) putService(c string, k types.NamespacedName) {
	i := slices.Index(w.clusters, c)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name,
		UID: types.UID(fmt.Sprintf("svc-%s-%s-%d", c, k, w.rv)), ResourceVersion: w.version()}}
	switch w.pick(8) {
	case 0, 1:
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	case 2:
		svc.Spec.Type = corev1.ServiceTypeExternalName
		svc.Spec.ExternalName = "example.invalid"
	default:
		for _, v6 := range w.someFamilies(i) {
			ip := fmt.Sprintf("10.%d.0.%d", 100+i, 1+w.pick(200))
			if v6 {
				ip = fmt.Sprintf("fd10:%x::%x", 100+i, 1+w.pick(200))
			}
			svc.Spec.ClusterIPs = append(svc.Spec.ClusterIPs, ip)
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, familyOf(ip))
		}
		svc.Spec.ClusterIP = svc.Spec.ClusterIPs[0]
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone && w.families[i].V6 {
		for _, v6 := range w.someFamilies(i) {
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, map[bool]corev1.IPFamily{false: corev1.IPv4Protocol, true: corev1.IPv6Protocol}[v6])
		}
	}
	ports := []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP},
		{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}
	for _, p := range ports {
		if w.pick(2) == 0 && !slices.ContainsFunc(svc.Spec.Ports, func(q corev1.ServicePort) bool { return q.Name == p.Name }) {
			svc.Spec.Ports = append(svc.Spec.Ports, p)
		}
	}
	if w.pick(4) == 0 {
		svc.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	}
	w.services[c][k] = svc
	w.slices[c][k] = nil
	w.touched[c] = true
	for range w.pick(3) {
		w.addSlice(c, k)
	}
}

func (w *randomWorld) addSlice(c string, k types.NamespacedName) {
	i := slices.Index(w.clusters, c)
	pod := 10 + i
	if w.globalnet {
		pod = 10 // under globalnet every cluster's pods are in one range
	}
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace,
		Name: fmt.Sprintf("%s-%d", k.Name, w.rv), UID: types.UID(fmt.Sprintf("slice-%s-%s-%d", c, k, w.rv)), ResourceVersion: w.version(),
		Labels: map[string]string{discoveryv1.LabelServiceName: k.Name}}, AddressType: discoveryv1.AddressTypeIPv4}
	v6 := w.someFamilies(i)[0]
	if v6 {
		s.AddressType = discoveryv1.AddressTypeIPv6
	}
	if w.pick(3) > 0 {
		s.Ports = []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080 + w.pick(2)))}}
	}
	for range w.pick(4) {
		addr := fmt.Sprintf("%d.0.%d.%d", pod, w.pick(4), 1+w.pick(50))
		if v6 {
			addr = fmt.Sprintf("fd10:%x:0:%x::%x", 10+i, w.pick(4), 1+w.pick(50))
		}
		ep := discoveryv1.Endpoint{Addresses: []string{addr},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(w.pick(4) > 0)}}
		if w.pick(2) == 0 {
			ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: fmt.Sprintf("pod-%d", w.pick(6))}
		}
		if w.pick(3) == 0 {
			ep.Hostname = ptr(fmt.Sprintf("host-%d", w.pick(3)))
		}
		s.Endpoints = append(s.Endpoints, ep)
	}
	w.slices[c][k] = append(w.slices[c][k], s)
	w.touched[c] = true
}

// someFamilies is a random non-empty list of cluster i's families, true for IPv6, in a
// random order.
func (w *randomWorld) someFamilies(i int) []bool {
	var out []bool
	for _, v6 := range []bool{false, true} {
		if w.families[i].Has(v6) && (w.pick(3) > 0 || len(out) == 0 && (v6 || !w.families[i].V6)) {
			out = append(out, v6)
		}
	}
	if len(out) == 2 && w.pick(2) == 0 {
		out[0], out[1] = out[1], out[0]
	}
	return out
}

func (w *randomWorld) putServiceExport(c string, k types.NamespacedName, hub bool) {
	se := &mcsv1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name,
		UID: types.UID(fmt.Sprintf("se-%s-%s-%d", c, k, w.rv)), ResourceVersion: w.version(),
		CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 1, 0, w.pick(5), 0, 0, time.UTC))}}
	if hub {
		se.Labels = map[string]string{straitv1.LabelManagedBy: straitv1.ManagedByHub}
	}
	if w.pick(4) == 0 {
		se.Spec.ExportedLabels = map[string]string{"tier": fmt.Sprint(w.pick(2))}
	}
	w.sexports[c][k] = se
	w.touched[c] = true
}

// change makes one random change and says what it was.
func (w *randomWorld) change() string {
	c := w.clusters[w.pick(len(w.clusters))]
	k := w.keys[w.pick(len(w.keys))]
	switch w.pick(11) {
	case 0:
		w.putService(c, k)
		return fmt.Sprintf("service %s in %s replaced", k, c)
	case 1:
		delete(w.services[c], k)
		delete(w.slices[c], k)
		w.touched[c] = true
		return fmt.Sprintf("service %s in %s removed", k, c)
	case 2:
		svc := w.services[c][k]
		if svc == nil {
			return "nothing"
		}
		svc = svc.DeepCopy()
		svc.ResourceVersion = w.version()
		if len(svc.Spec.Ports) > 0 {
			svc.Spec.Ports[0].Port++
		}
		w.services[c][k] = svc
		w.touched[c] = true
		return fmt.Sprintf("service %s in %s re-ported", k, c)
	case 3:
		if len(w.slices[c][k]) > 0 && w.pick(2) == 0 {
			ss := slices.Clone(w.slices[c][k])
			i := w.pick(len(ss))
			ss = slices.Delete(ss, i, i+1)
			w.slices[c][k] = ss
			w.touched[c] = true
			return fmt.Sprintf("a slice of %s in %s removed", k, c)
		}
		w.addSlice(c, k)
		return fmt.Sprintf("a slice of %s in %s added", k, c)
	case 4:
		ss := w.slices[c][k]
		if len(ss) == 0 {
			return "nothing"
		}
		ss = slices.Clone(ss)
		i := w.pick(len(ss))
		s := ss[i].DeepCopy()
		s.ResourceVersion = w.version()
		for j := range s.Endpoints {
			s.Endpoints[j].Conditions.Ready = ptr(w.pick(2) == 0)
		}
		ss[i] = s
		w.slices[c][k] = ss
		w.touched[c] = true
		return fmt.Sprintf("the endpoints of a slice of %s in %s changed", k, c)
	case 5:
		if w.exports[k] != nil && w.pick(3) == 0 {
			delete(w.exports, k)
			return fmt.Sprintf("export %s dropped from the spec", k)
		}
		w.declare(k)
		return fmt.Sprintf("export %s declared anew", k)
	case 6:
		if w.sexports[c][k] != nil && w.pick(2) == 0 {
			delete(w.sexports[c], k)
			w.touched[c] = true
			return fmt.Sprintf("ServiceExport %s in %s removed", k, c)
		}
		w.putServiceExport(c, k, w.policy == straitv1.ExportPolicyDeclared || w.pick(2) == 0)
		return fmt.Sprintf("ServiceExport %s in %s written", k, c)
	case 7:
		// Every other member's Peer of c changes, and nothing else.
		w.moves[c]++
		w.touched[c] = true
		return fmt.Sprintf("the gateway of %s moved", c)
	case 8:
		if !w.globalnet || len(w.plans) == 0 {
			return "nothing"
		}
		// Mostly the last plan's, as after the hub's writes; now and then an older
		// one's, as a member that lagged behind or was restored from a backup.
		back := 0
		if w.pick(3) == 0 {
			back = w.pick(len(w.plans))
		}
		w.hold(c, w.plans[len(w.plans)-1-back])
		return fmt.Sprintf("%s holds what the plan %d back gave it", c, back)
	case 9:
		if !w.globalnet {
			return "nothing"
		}
		w.pinned[c] = !w.pinned[c]
		return fmt.Sprintf("%s's global CIDR pinned: %t", c, w.pinned[c])
	}
	return "nothing"
}

// hold makes c hold the Membership and the GlobalIngresses of plan p, as the hub's
// writes would: its next plans keep what it holds.
func (w *randomWorld) hold(c string, p *Plan) {
	w.held[c] = heldBy(p, nil)[c]
	w.touched[c] = true
}

// clusterSet is the spec as it is now, exports sorted by key.
func (w *randomWorld) clusterSet() *straitv1.ClusterSet {
	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "random", Namespace: straitv1.SystemNamespace},
		Spec: straitv1.ClusterSetSpec{ExportPolicy: w.policy}}
	if w.globalnet {
		cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, ClusterSize: w.clusterSize}
	}
	for i, c := range w.clusters {
		pod := fmt.Sprintf("10.%d.0.0/16", 10+i)
		if w.globalnet {
			pod = "10.10.0.0/16"
		}
		cl := straitv1.ClusterSpec{Name: c}
		if w.pinned[c] { // a block the allocation in order would give no cluster first
			cl.GlobalCIDR = fmt.Sprintf("242.%d.0.0/16", 100+i)
			if w.clusterSize != 0 {
				cl.GlobalCIDR = fmt.Sprintf("242.0.%d.0/28", 100+i)
			}
		}
		if w.families[i].V4 {
			cl.PodCIDRs, cl.ServiceCIDRs = []string{pod}, []string{fmt.Sprintf("10.%d.0.0/16", 100+i)}
		}
		if w.families[i].V6 {
			cl.PodCIDRs = append(cl.PodCIDRs, fmt.Sprintf("fd10:%x::/48", 10+i))
			cl.ServiceCIDRs = append(cl.ServiceCIDRs, fmt.Sprintf("fd10:%x::/112", 100+i))
		}
		cs.Spec.Clusters = append(cs.Spec.Clusters, cl)
	}
	for _, k := range w.keys {
		if e := w.exports[k]; e != nil {
			cs.Spec.Exports = append(cs.Spec.Exports, *e.DeepCopy())
		}
	}
	return cs
}

// observed is what the members hold now, as the hub hands it: a member's facts are the
// ones handed last unless it changed since, then new facts in new slices (a plan
// handed earlier facts keeps them unchanged); and one time in four an unchanged
// member's are new facts with the same content, as when the hub lists it anew.
func (w *randomWorld) observed() Observed {
	obs := Observed{}
	w.handedAnew = w.handedAnew[:0]
	for i, c := range w.clusters {
		if f := w.facts[c]; f != nil && !w.touched[c] && w.pick(4) > 0 {
			obs[c] = f
			continue
		}
		w.handedAnew = append(w.handedAnew, c)
		delete(w.touched, c)
		f := &MemberFacts{KubeSystemUID: types.UID("ks-" + c), Gateways: []straitv1.Gateway{{Spec: straitv1.GatewaySpec{
			NodeName: c + "-gw", HAState: straitv1.HAActive, IP: fmt.Sprintf("192.0.2.%d", (i+w.moves[c]*16)%250+1), Port: 51871, Driver: straitv1.CableWireGuard}}}}
		if h := w.held[c]; h != nil {
			f.Membership, f.GlobalIngresses = h.Membership, h.GlobalIngresses
		}
		for _, k := range w.keys {
			if s := w.services[c][k]; s != nil {
				f.Services = append(f.Services, *s)
			}
			for _, s := range w.slices[c][k] {
				f.EndpointSlices = append(f.EndpointSlices, *s)
			}
			if se := w.sexports[c][k]; se != nil {
				f.ServiceExports = append(f.ServiceExports, *se)
			}
		}
		obs[c], w.facts[c] = f, f
	}
	return obs
}
