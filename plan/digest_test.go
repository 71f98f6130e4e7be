package plan

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// mutation changes a clusterset or what its members hold.
type mutation struct {
	name   string
	change func(cs *straitv1.ClusterSet, obs Observed)
}

// mutations are one change to every field the plan reads, applied to each example in
// turn: cluster IPs, ports, readiness, addresses, hostnames, pods, gateways, exports,
// CIDRs, cable, DNS, globalnet.
func mutations(cs *straitv1.ClusterSet, obs Observed) []mutation {
	var out []mutation
	add := func(name string, f func(cs *straitv1.ClusterSet, obs Observed)) {
		out = append(out, mutation{name, f})
	}
	for c, f := range obs {
		for i := range f.Services {
			add(fmt.Sprintf("%s: service %d cluster IP", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				s := &obs[c].Services[i].Spec
				if a, err := netip.ParseAddr(s.ClusterIP); err == nil {
					s.ClusterIP = a.Next().String()
				}
			})
			add(fmt.Sprintf("%s: service %d port", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				obs[c].Services[i].Spec.Ports[0].Port++
			})
			add(fmt.Sprintf("%s: service %d target port", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				obs[c].Services[i].Spec.Ports[0].TargetPort = intstr.FromInt32(9999)
			})
			add(fmt.Sprintf("%s: service %d publishNotReady", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				obs[c].Services[i].Spec.PublishNotReadyAddresses = !obs[c].Services[i].Spec.PublishNotReadyAddresses
			})
			add(fmt.Sprintf("%s: service %d gone", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				obs[c].Services = append(obs[c].Services[:i:i], obs[c].Services[i+1:]...)
			})
		}
		for i := range f.EndpointSlices {
			if len(f.EndpointSlices[i].Endpoints) == 0 {
				continue
			}
			add(fmt.Sprintf("%s: slice %d ready", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				ep := &obs[c].EndpointSlices[i].Endpoints[0]
				ep.Conditions.Ready = ptr(!isReady(*ep))
			})
			add(fmt.Sprintf("%s: slice %d address", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				ep := &obs[c].EndpointSlices[i].Endpoints[0]
				a := netip.MustParseAddr(ep.Addresses[0])
				ep.Addresses = []string{a.Next().String()}
			})
			add(fmt.Sprintf("%s: slice %d hostname", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				obs[c].EndpointSlices[i].Endpoints[0].Hostname = ptr("renamed")
			})
			add(fmt.Sprintf("%s: slice %d pod", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				ep := &obs[c].EndpointSlices[i].Endpoints[0]
				ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: "another-pod"}
			})
			add(fmt.Sprintf("%s: slice %d port", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				if len(obs[c].EndpointSlices[i].Ports) > 0 {
					obs[c].EndpointSlices[i].Ports[0].Port = ptr(int32(7777))
				}
			})
		}
		for i := range f.Gateways {
			add(fmt.Sprintf("%s: gateway %d IP", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				obs[c].Gateways[i].Spec.IP = "198.51.100.99"
			})
			add(fmt.Sprintf("%s: gateway %d key", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				obs[c].Gateways[i].Spec.PublicKey = "another-key"
			})
			add(fmt.Sprintf("%s: gateway %d passive", c, i), func(_ *straitv1.ClusterSet, obs Observed) {
				obs[c].Gateways[i].Spec.HAState = straitv1.HAPassive
			})
		}
	}
	for i := range cs.Spec.Clusters {
		add(fmt.Sprintf("cluster %d gateway selector", i), func(cs *straitv1.ClusterSet, _ Observed) {
			cs.Spec.Clusters[i].Gateway.NodeSelector = map[string]string{"gw": "yes"}
		})
		add(fmt.Sprintf("cluster %d pod CIDR", i), func(cs *straitv1.ClusterSet, _ Observed) {
			cs.Spec.Clusters[i].PodCIDRs = []string{fmt.Sprintf("10.%d.0.0/16", 200+i)}
		})
		add(fmt.Sprintf("cluster %d removed", i), func(cs *straitv1.ClusterSet, _ Observed) {
			cs.Spec.Clusters = append(cs.Spec.Clusters[:i:i], cs.Spec.Clusters[i+1:]...)
			for j := range cs.Spec.Exports {
				cs.Spec.Exports[j].Clusters = nil
			}
		})
	}
	for i := range cs.Spec.Exports {
		add(fmt.Sprintf("export %d removed", i), func(cs *straitv1.ClusterSet, _ Observed) {
			cs.Spec.Exports = append(cs.Spec.Exports[:i:i], cs.Spec.Exports[i+1:]...)
		})
		add(fmt.Sprintf("export %d from every cluster", i), func(cs *straitv1.ClusterSet, _ Observed) {
			cs.Spec.Exports[i].Clusters = nil
		})
		add(fmt.Sprintf("export %d prefers local endpoints", i), func(cs *straitv1.ClusterSet, _ Observed) {
			cs.Spec.Exports[i].ClusterSetIP = straitv1.ClusterSetIPPreferLocal
		})
	}
	add("vxlan cable", func(cs *straitv1.ClusterSet, _ Observed) { cs.Spec.Cable.Driver = straitv1.CableVXLAN })
	add("ipsec cable", func(cs *straitv1.ClusterSet, _ Observed) {
		cs.Spec.Cable.Driver = straitv1.CableIPsec
		cs.Spec.Cable.PSKSecretRef = &meta.LocalObjectReference{Name: "psk"}
	})
	add("cable port", func(cs *straitv1.ClusterSet, _ Observed) { cs.Spec.Cable.Port = 4242 })
	add("dns zone", func(cs *straitv1.ClusterSet, _ Observed) { cs.Spec.DNS.ExtraZones = []string{"example.test"} })
	add("member exports", func(cs *straitv1.ClusterSet, _ Observed) {
		cs.Spec.ExportPolicy = straitv1.ExportPolicyMemberExports
	})
	add("globalnet toggled", func(cs *straitv1.ClusterSet, _ Observed) {
		if cs.Spec.Globalnet != nil && cs.Spec.Globalnet.Enabled {
			cs.Spec.Globalnet = nil
			return
		}
		cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true}
		for i := range cs.Spec.Clusters {
			cs.Spec.Clusters[i].PodCIDRs = []string{fmt.Sprintf("10.%d.0.0/16", 100+i)}
			cs.Spec.Clusters[i].ServiceCIDRs = []string{fmt.Sprintf("10.%d.0.0/16", 150+i)}
		}
	})
	return out
}

// memberView is everything a member is to hold, serialized.
func memberView(t *testing.T, p *Plan, cluster string) string {
	t.Helper()
	conds := map[string][]metav1.Condition{}
	for k, c := range p.ServiceExportConditions(cluster) {
		conds[k.String()] = c
	}
	data, err := json.Marshal([]any{p.Objects(cluster), conds})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func objectsJSON(t *testing.T, objs any) string {
	t.Helper()
	data, err := json.Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestObjectsOfEveryGroupAreTheObjects: building a member's objects group by group
// gives what Objects gives.
func TestObjectsOfEveryGroupAreTheObjects(t *testing.T) {
	for _, name := range examples(t) {
		cs, obs := loadExample(t, name)
		p := mustCompute(t, cs, obs)
		for _, c := range p.Clusters() {
			all := map[string]bool{}
			for g := range groupMap(p.Groups(c)) {
				all[g] = true
			}
			if objectsJSON(t, p.ObjectsOf(c, all)) != objectsJSON(t, p.Objects(c)) {
				t.Errorf("%s: %s's objects by group differ from its objects", name, c)
			}
		}
	}
}

// TestMemberDigestChangesWhenTheMemberWouldChange: after any change to a clusterset or
// to what its members hold, every member whose objects or export conditions change
// gets a new digest. The hub skips members by this digest, so a change it missed would
// never reach the member until the periodic resync.
func TestMemberDigestChangesWhenTheMemberWouldChange(t *testing.T) {
	for _, name := range examples(t) {
		base, baseObs := loadExample(t, name)
		p0 := mustCompute(t, base, baseObs)
		for _, m := range mutations(base, baseObs) {
			cs, obs := loadExample(t, name)
			m.change(cs, obs)
			p1, errs := Compute(cs, obs)
			if len(errs) > 0 {
				continue // a change the validator refuses leaves members as they are
			}
			for _, c := range p1.Clusters() {
				changed := memberView(t, p0, c) != memberView(t, p1, c)
				if changed && p0.MemberDigest(c) == p1.MemberDigest(c) {
					t.Errorf("%s, %s: %s's objects changed but its digest did not", name, m.name, c)
				}
				// The groups whose digest stayed hold the same objects.
				same := map[string]bool{}
				g0 := groupMap(p0.Groups(c))
				for g, d := range groupMap(p1.Groups(c)) {
					if v, ok := g0[g]; ok && v == d {
						same[g] = true
					}
				}
				if objectsJSON(t, p0.ObjectsOf(c, same)) != objectsJSON(t, p1.ObjectsOf(c, same)) {
					t.Errorf("%s, %s: %s: objects of groups with unchanged digests changed", name, m.name, c)
				}
			}
		}
	}
}

// TestMemberDigestOfAnUntouchedMemberStays: under globalnet, a new cluster IP of a
// service one member exports changes what that member holds (its GlobalIngress, its own
// EndpointSlice) and nothing elsewhere: the other members see the global IP. Only that
// member's digest moves, which is what lets the hub skip the others.
func TestMemberDigestOfAnUntouchedMemberStays(t *testing.T) {
	cs, obs := loadExample(t, "globalnet")
	p0 := mustCompute(t, cs, obs)
	obs["g2"].Services[0].Spec.ClusterIP = "10.77.0.99"
	p1 := mustCompute(t, cs, obs)
	if p0.MemberDigest("g2") == p1.MemberDigest("g2") {
		t.Error("g2's digest did not change with its service's cluster IP")
	}
	if memberView(t, p0, "g1") != memberView(t, p1, "g1") {
		t.Fatal("g1's objects changed: the test's premise is wrong")
	}
	if p0.MemberDigest("g1") != p1.MemberDigest("g1") {
		t.Error("g1's digest changed although nothing it holds did")
	}
}

// TestMemberDigestIsStable: the same input gives the same digest, in another plan too.
func TestMemberDigestIsStable(t *testing.T) {
	for _, name := range examples(t) {
		cs, obs := loadExample(t, name)
		a, b := mustCompute(t, cs, obs), mustCompute(t, cs, obs)
		for _, c := range a.Clusters() {
			if a.MemberDigest(c) != b.MemberDigest(c) {
				t.Errorf("%s: %s's digest differs between two plans of the same input", name, c)
			}
		}
		if a.MemberDigest("no-such-cluster") != 0 {
			t.Errorf("%s: a cluster outside the plan has a digest", name)
		}
	}
}

// TestMemberDigestFollowsTheServiceExportGeneration: the hub stamps a ServiceExport's
// conditions with its generation, so a new generation must reach the member.
func TestMemberDigestFollowsTheServiceExportGeneration(t *testing.T) {
	cs, obs := loadExample(t, "globalnet")
	se := mcsv1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Namespace: cs.Spec.Exports[0].Namespace, Name: cs.Spec.Exports[0].Name, Generation: 1}}
	obs["g2"].ServiceExports = append(obs["g2"].ServiceExports, se)
	before := mustCompute(t, cs, obs).MemberDigest("g2")
	obs["g2"].ServiceExports[len(obs["g2"].ServiceExports)-1].Generation = 2
	if mustCompute(t, cs, obs).MemberDigest("g2") == before {
		t.Error("g2's digest did not change with its ServiceExport's generation")
	}
}

// TestMembersShareTheirGroupDigests: the members of one view hold one slice of group
// digests between them, and a member keeps its own digests of the exports it exports
// alone, so that the hub's last groups of 1,000 members are not 1,000 copies of 10,000
// digests.
func TestMembersShareTheirGroupDigests(t *testing.T) {
	shared := 0
	for seed := range uint64(8) {
		w := newRandomWorld(seed)
		v, errs := Check(w.clusterSet())
		if len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
		p, errs := v.Compute(w.observed())
		if len(errs) > 0 {
			t.Fatal(errs.ToAggregate())
		}
		for _, a := range p.Clusters() {
			for _, b := range p.Clusters() {
				ga, gb := p.Groups(a), p.Groups(b)
				if a == b || p.views[a] != p.views[b] || len(ga.shared) == 0 {
					continue
				}
				if &ga.shared[0] != &gb.shared[0] {
					t.Fatalf("seed %d: %s and %s, of one view, hold copies of the digests", seed, a, b)
				}
				shared++
				for i := range ga.Keys {
					ownA := slices.ContainsFunc(ga.own, func(o ownGroup) bool { return o.key == i })
					ownB := slices.ContainsFunc(gb.own, func(o ownGroup) bool { return o.key == i })
					if !ownA && !ownB && ga.Digest(i) != gb.Digest(i) && i > 0 {
						t.Errorf("seed %d: group %s: %s and %s export nothing of it and hold other digests", seed, ga.Keys[i], a, b)
					}
				}
			}
			g := p.Groups(a)
			if len(g.own) != len(p.digests.involved[a]) {
				t.Errorf("seed %d: %s takes part in %d exports and keeps %d digests of its own", seed, a, len(p.digests.involved[a]), len(g.own))
			}
		}
	}
	if shared == 0 {
		t.Fatal("no two members of one view: the test's premise is wrong")
	}
}
