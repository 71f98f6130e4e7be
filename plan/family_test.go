package plan

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// dualStackSet is c1 and c2 dual-stack and c3 IPv4 only, exporting app/web
// (ClusterSetIP) and app/db (headless) from c1; with globalnet, c1 and c2 share their
// IPv4 ranges.
func dualStackSet(globalnet bool) *straitv1.ClusterSet {
	cs := &straitv1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "strait-system"},
		Spec: straitv1.ClusterSetSpec{Clusters: []straitv1.ClusterSpec{
			{Name: "c1", PodCIDRs: []string{"10.8.0.0/16", "fd10:8::/56"}, ServiceCIDRs: []string{"10.88.0.0/16", "fd10:88::/112"}},
			{Name: "c2", PodCIDRs: []string{"10.9.0.0/16", "fd10:9::/56"}, ServiceCIDRs: []string{"10.99.0.0/16", "fd10:99::/112"}},
			{Name: "c3", PodCIDRs: []string{"10.7.0.0/16"}, ServiceCIDRs: []string{"10.77.0.0/16"}},
		},
			Exports: []straitv1.ExportSpec{{Namespace: "app", Name: "web", Clusters: []string{"c1"}},
				{Namespace: "app", Name: "db", Clusters: []string{"c1"}}}},
	}
	if globalnet {
		cs.Spec.Clusters[1].PodCIDRs[0], cs.Spec.Clusters[1].ServiceCIDRs[0] = "10.8.0.0/16", "10.88.0.0/16"
		cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true}
	}
	return cs
}

// dualStackFacts: c1's web has both families' cluster IPs and pods, db is headless over
// pods of both families.
func dualStackFacts(families ...corev1.IPFamily) Observed {
	web := svc("app", "web", "10.88.0.10", corev1.ServicePort{Name: "http", Port: 80})
	web.Spec.IPFamilies = families
	web.Spec.ClusterIPs = nil
	for _, f := range families {
		web.Spec.ClusterIPs = append(web.Spec.ClusterIPs, map[corev1.IPFamily]string{corev1.IPv4Protocol: "10.88.0.10", corev1.IPv6Protocol: "fd10:88::10"}[f])
	}
	web.Spec.ClusterIP = web.Spec.ClusterIPs[0]
	db := svc("app", "db", "None", corev1.ServicePort{Name: "sql", Port: 5432})
	db.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	targets := []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}}
	sql := []discoveryv1.EndpointPort{{Name: ptr("sql"), Port: ptr(int32(5432))}}
	v6 := func(sl discoveryv1.EndpointSlice) discoveryv1.EndpointSlice {
		sl.AddressType = discoveryv1.AddressTypeIPv6
		return sl
	}
	return Observed{"c1": {Services: []corev1.Service{web, db}, EndpointSlices: []discoveryv1.EndpointSlice{
		podSlice("app", "web", "web-4", targets, map[string]bool{"10.8.1.5": true}),
		v6(podSlice("app", "web", "web-6", targets, map[string]bool{"fd10:8:0:1::5": true})),
		podSlice("app", "db", "db-4", sql, map[string]bool{"10.8.1.7": true}),
		v6(podSlice("app", "db", "db-6", sql, map[string]bool{"fd10:8:0:1::7": true})),
	}}}
}

// computeWithIPv6 checks and computes a plan of a ClusterSet with IPv6 ranges.
func computeWithIPv6(t *testing.T, cs *straitv1.ClusterSet, obs Observed) *Plan {
	t.Helper()
	v, errs := Check(cs)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	p, errs := v.Compute(obs)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	return p
}

// slicesOf are the addresses of the MCS EndpointSlices of service name in objs, by slice
// name, with the slice's address type.
func slicesOf(objs []client.Object, label, name string) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		sl, ok := o.(*discoveryv1.EndpointSlice)
		if !ok || sl.Labels[label] != name {
			continue
		}
		var addrs []string
		for _, ep := range sl.Endpoints {
			addrs = append(addrs, ep.Addresses...)
		}
		out[sl.Name] = string(sl.AddressType) + " " + strings.Join(addrs, ",")
	}
	return out
}

func TestADualStackImportInEveryFamilyAMemberHas(t *testing.T) {
	p := computeWithIPv6(t, dualStackSet(false), dualStackFacts(corev1.IPv4Protocol, corev1.IPv6Protocol))
	for _, tc := range []struct {
		member           string
		families         []corev1.IPFamily
		policy           corev1.IPFamilyPolicy
		web, derived, db map[string]string
	}{
		{"c2", []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}, corev1.IPFamilyPolicyRequireDualStack,
			map[string]string{"web-c1": "IPv4 10.88.0.10", "web-c1.ipv6": "IPv6 fd10:88::10"},
			map[string]string{DerivedServiceName("web") + "-c1": "IPv4 10.8.1.5", DerivedServiceName("web") + "-c1.ipv6": "IPv6 fd10:8:0:1::5"},
			map[string]string{"db-c1": "IPv4 10.8.1.7", "db-c1.ipv6": "IPv6 fd10:8:0:1::7"}},
		{"c3", []corev1.IPFamily{corev1.IPv4Protocol}, corev1.IPFamilyPolicySingleStack,
			map[string]string{"web-c1": "IPv4 10.88.0.10"},
			map[string]string{DerivedServiceName("web") + "-c1": "IPv4 10.8.1.5"},
			map[string]string{"db-c1": "IPv4 10.8.1.7"}},
	} {
		objs := p.Objects(tc.member)
		si := find[*mcsv1.ServiceImport](objs, "app", "web")
		if !slices.Equal(si.Spec.IPFamilies, tc.families) || si.Status.Conditions[0].Status != metav1.ConditionTrue {
			t.Errorf("%s: import families %v, Ready %s; want %v, True", tc.member, si.Spec.IPFamilies, si.Status.Conditions[0].Status, tc.families)
		}
		d := find[*corev1.Service](objs, "app", DerivedServiceName("web"))
		if d == nil || !slices.Equal(d.Spec.IPFamilies, tc.families) || *d.Spec.IPFamilyPolicy != tc.policy {
			t.Errorf("%s: derived Service %+v, want families %v, policy %s", tc.member, d, tc.families, tc.policy)
		}
		for _, got := range []struct {
			what       string
			have, want map[string]string
		}{
			{"web's MCS slices", slicesOf(objs, mcsv1.LabelServiceName, "web"), tc.web},
			{"the derived Service's slices", slicesOf(objs, discoveryv1.LabelServiceName, DerivedServiceName("web")), tc.derived},
			{"db's MCS slices", slicesOf(objs, mcsv1.LabelServiceName, "db"), tc.db},
		} {
			if !maps.Equal(got.have, got.want) {
				t.Errorf("%s: %s %v, want %v", tc.member, got.what, got.have, got.want)
			}
		}
	}
	if p.MemberDigest("c2") == p.MemberDigest("c3") {
		t.Error("c2 (dual-stack) and c3 (IPv4 only) hold different objects but have one digest")
	}
}

func TestAnImportOfAFamilyAMemberLacksIsNotSupportedThere(t *testing.T) {
	p := computeWithIPv6(t, dualStackSet(false), dualStackFacts(corev1.IPv6Protocol))
	objs := p.Objects("c3")
	si := find[*mcsv1.ServiceImport](objs, "app", "web")
	if c := si.Status.Conditions[0]; c.Status != metav1.ConditionFalse || c.Reason != string(mcsv1.ServiceImportReasonIPFamilyNotSupported) ||
		!strings.Contains(c.Message, "[IPv6]") || !strings.Contains(c.Message, "IPv4 only") {
		t.Errorf("c3 (IPv4 only), an IPv6-only import: Ready %+v, want False, IPFamilyNotSupported, naming both families", c)
	}
	if d := find[*corev1.Service](objs, "app", DerivedServiceName("web")); d != nil {
		t.Errorf("c3 got a derived Service %v for an import of a family it lacks", d.Spec.IPFamilies)
	}
	c2 := find[*mcsv1.ServiceImport](p.Objects("c2"), "app", "web")
	if c := c2.Status.Conditions[0]; c.Status != metav1.ConditionTrue || !slices.Equal(c2.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv6Protocol}) {
		t.Errorf("c2 (dual-stack), the IPv6-only import: families %v, Ready %+v; want [IPv6], True", c2.Spec.IPFamilies, c)
	}
}

// Under globalnet a dual-stack member sees another's IPv4 as global IPs and its IPv6 as
// it is, and a change of an IPv6 address changes what every importing member holds.
func TestGlobalnetTranslatesIPv4AndRoutesIPv6(t *testing.T) {
	cs := dualStackSet(true)
	obs := dualStackFacts(corev1.IPv4Protocol, corev1.IPv6Protocol)
	p := computeWithIPv6(t, cs, obs)
	a := p.Allocation("c1")
	global, dbGlobal := a.Services["app/web"].String(), ""
	for k, g := range a.Endpoints {
		if strings.HasPrefix(k, "app/db/") {
			if dbGlobal != "" {
				t.Errorf("db has global IPs for more than its IPv4 endpoint: %v", a.Endpoints)
			}
			dbGlobal = g.String()
		}
	}
	objs := p.Objects("c2")
	if got, want := slicesOf(objs, mcsv1.LabelServiceName, "web"), map[string]string{"web-c1": "IPv4 " + global, "web-c1.ipv6": "IPv6 fd10:88::10"}; !maps.Equal(got, want) {
		t.Errorf("c2 sees web as %v, want %v", got, want)
	}
	if got, want := slicesOf(objs, mcsv1.LabelServiceName, "db"), map[string]string{"db-c1": "IPv4 " + dbGlobal, "db-c1.ipv6": "IPv6 fd10:8:0:1::7"}; !maps.Equal(got, want) {
		t.Errorf("c2 sees db as %v, want %v", got, want)
	}
	gi := find[*straitv1.GlobalIngress](p.Objects("c1"), straitv1.SystemNamespace, GlobalIngressName("app", "web"))
	if gi == nil || gi.Spec.ServiceIP != "10.88.0.10" {
		t.Errorf("c1's GlobalIngress of web %+v, want service IP 10.88.0.10 (the IPv4 one)", gi)
	}
	before := p.MemberDigest("c2")
	obs["c1"].EndpointSlices[3].Endpoints[0].Addresses[0] = "fd10:8:0:1::8"
	if after := computeWithIPv6(t, cs, obs).MemberDigest("c2"); after == before {
		t.Error("db's IPv6 endpoint moved, which c2 sees as it is, but c2's digest stayed")
	}
}

func TestSummarise(t *testing.T) {
	for _, tc := range []struct {
		in, want []string
	}{
		{[]string{"10.10.1.0/24", "10.10.2.0/24"}, []string{"10.10.0.0/22"}},
		{[]string{"10.10.2.0/24"}, []string{"10.10.2.0/24"}},
		{[]string{"10.10.0.0/24", "10.10.255.0/24"}, []string{"10.10.0.0/16"}},
		{[]string{"fd10:8:0:2::/64", "10.10.2.0/24", "fd10:8:0:1::/64"}, []string{"10.10.2.0/24", "fd10:8::/62"}},
		{[]string{"nonsense"}, nil},
		{nil, nil},
	} {
		if got := Summarise(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Summarise(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A member routes the ranges of its own families to a peer: c3 (IPv4 only) none of c1's
// IPv6 ones; under globalnet, c1's IPv4 is its global CIDR and its IPv6 is routed as it
// is. Members of the same families hold the same Peers, which the digests assume.
func TestPeersRouteTheFamiliesTheMemberHas(t *testing.T) {
	peerCIDRs := func(p *Plan, member, remote string) []string {
		pe := find[*straitv1.Peer](p.Objects(member), straitv1.SystemNamespace, remote)
		if pe == nil {
			t.Fatalf("%s has no Peer %s", member, remote)
		}
		return pe.Spec.CIDRs
	}
	p := computeWithIPv6(t, dualStackSet(false), dualStackFacts(corev1.IPv4Protocol, corev1.IPv6Protocol))
	for _, c := range []struct {
		member, remote string
		want           []string
	}{
		{"c2", "c1", []string{"10.8.0.0/16", "fd10:8::/56", "10.88.0.0/16", "fd10:88::/112"}},
		{"c3", "c1", []string{"10.8.0.0/16", "10.88.0.0/16"}},
		{"c1", "c3", []string{"10.7.0.0/16", "10.77.0.0/16"}},
	} {
		if got := peerCIDRs(p, c.member, c.remote); !slices.Equal(got, c.want) {
			t.Errorf("%s routes %v to %s, want %v", c.member, got, c.remote, c.want)
		}
	}
	p = computeWithIPv6(t, dualStackSet(true), dualStackFacts(corev1.IPv4Protocol, corev1.IPv6Protocol))
	global := p.Allocation("c1").GlobalCIDR.String()
	if got, want := peerCIDRs(p, "c2", "c1"), []string{global, "fd10:8::/56", "fd10:88::/112"}; !slices.Equal(got, want) {
		t.Errorf("under globalnet c2 routes %v to c1, want %v", got, want)
	}
	if got, want := peerCIDRs(p, "c3", "c1"), []string{global}; !slices.Equal(got, want) {
		t.Errorf("under globalnet c3 (IPv4 only) routes %v to c1, want %v", got, want)
	}
}
