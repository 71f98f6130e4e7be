package plan

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// find returns the object of type T named ns/name among objs, or nil.
func find[T client.Object](objs []client.Object, ns, name string) T {
	var zero T
	for _, o := range objs {
		if v, ok := o.(T); ok && o.GetNamespace() == ns && o.GetName() == name {
			return v
		}
	}
	return zero
}

func TestEveryExampleRendersEveryMember(t *testing.T) {
	for _, ex := range examples(t) {
		cs, obs := loadExample(t, ex)
		p := mustCompute(t, cs, obs)
		if len(p.Clusters()) != len(cs.Spec.Clusters) {
			t.Fatalf("%s: plan has clusters %v", ex, p.Clusters())
		}
		for _, c := range p.Clusters() {
			objs := p.Objects(c)
			m := find[*straitv1.Membership](objs, straitv1.SystemNamespace, straitv1.MembershipName)
			if m == nil || m.Spec.ClusterID != c {
				t.Errorf("%s: member %s has no Membership for itself", ex, c)
			}
			for _, r := range p.Clusters() {
				if r != c && find[*straitv1.Peer](objs, straitv1.SystemNamespace, r) == nil {
					t.Errorf("%s: member %s has no Peer for %s", ex, c, r)
				}
			}
			for _, o := range objs {
				if o.GetAnnotations()[straitv1.AnnotationTargetCluster] != c {
					t.Errorf("%s: %T %s in %s lacks its target-cluster annotation", ex, o, o.GetName(), c)
				}
				if o.GetLabels()[straitv1.LabelClusterSet] != "strait-system."+cs.Name {
					t.Errorf("%s: %T %s lacks the clusterset label", ex, o, o.GetName())
				}
			}
		}
	}
}

func TestGlobalnetRoutesGlobalCIDRsOnly(t *testing.T) {
	cs, obs := loadExample(t, "globalnet")
	p := mustCompute(t, cs, obs)
	g1 := p.Objects("g1")
	peer := find[*straitv1.Peer](g1, straitv1.SystemNamespace, "g2")
	if !slices.Equal(peer.Spec.CIDRs, []string{"242.2.0.0/24"}) {
		t.Fatalf("g1's Peer for g2 routes %v, want only 242.2.0.0/24", peer.Spec.CIDRs)
	}
	if peer.Spec.Endpoint == nil || peer.Spec.Endpoint.IP != "192.0.2.21" {
		t.Errorf("g1's Peer for g2 has endpoint %+v, want g2's active gateway 192.0.2.21", peer.Spec.Endpoint)
	}

	gi := find[*straitv1.GlobalIngress](p.Objects("g2"), straitv1.SystemNamespace, "whereami-cs.sample")
	if gi == nil {
		t.Fatal("g2 has no GlobalIngress for sample/whereami-cs")
	}
	ip := netip.MustParseAddr(gi.Spec.GlobalIP)
	if !netip.MustParsePrefix("242.2.0.0/24").Contains(ip) || gi.Spec.ServiceIP != "10.77.0.10" {
		t.Errorf("whereami-cs maps global %s to %s, want an address of 242.2.0.0/24 to 10.77.0.10", ip, gi.Spec.ServiceIP)
	}
	for _, egress := range p.Allocation("g2").EgressIPs {
		if egress == ip {
			t.Errorf("global IP %s is also an egress IP", ip)
		}
	}
	slice := find[*discoveryv1.EndpointSlice](g1, "sample", "whereami-cs-g2")
	if slice == nil || len(slice.Endpoints) != 1 || slice.Endpoints[0].Addresses[0] != ip.String() {
		t.Fatalf("g1 sees whereami-cs of g2 as %+v, want its global IP %s", slice, ip)
	}
	// g2 itself keeps its own cluster IP: local clients need no NAT.
	local := find[*discoveryv1.EndpointSlice](p.Objects("g2"), "sample", "whereami-cs-g2")
	if local == nil || local.Endpoints[0].Addresses[0] != "10.77.0.10" {
		t.Errorf("g2's own slice is %+v, want its cluster IP 10.77.0.10", local)
	}
	m := find[*straitv1.Membership](g1, straitv1.SystemNamespace, straitv1.MembershipName)
	if m.Spec.Globalnet == nil || m.Spec.Globalnet.GlobalCIDR != "242.1.0.0/24" || len(m.Spec.Globalnet.EgressIPs) != 8 {
		t.Errorf("g1's Membership globalnet = %+v, want 242.1.0.0/24 with 8 egress IPs", m.Spec.Globalnet)
	}
}

func TestBasicImports(t *testing.T) {
	cs, obs := loadExample(t, "basic")
	p := mustCompute(t, cs, obs)
	c1 := p.Objects("c1")

	peer := find[*straitv1.Peer](c1, straitv1.SystemNamespace, "c2")
	if !slices.Equal(peer.Spec.CIDRs, []string{"10.9.0.0/16", "10.99.0.0/16"}) {
		t.Errorf("c1's Peer for c2 routes %v", peer.Spec.CIDRs)
	}
	si := find[*mcsv1.ServiceImport](c1, "sample", "whereami-cs")
	if si == nil || si.Spec.Type != mcsv1.ClusterSetIP || len(si.Spec.Ports) != 1 || si.Spec.Ports[0].Port != 80 {
		t.Fatalf("c1's ServiceImport whereami-cs = %+v", si)
	}
	cs2 := find[*discoveryv1.EndpointSlice](c1, "sample", "whereami-cs-c2")
	if cs2.Labels[mcsv1.LabelServiceName] != "whereami-cs" || cs2.Labels[mcsv1.LabelSourceCluster] != "c2" {
		t.Errorf("slice labels = %v", cs2.Labels)
	}
	if len(cs2.Endpoints) != 1 || cs2.Endpoints[0].Addresses[0] != "10.99.0.10" || !*cs2.Endpoints[0].Conditions.Ready {
		t.Errorf("whereami-cs from c2 = %+v, want one ready address 10.99.0.10", cs2.Endpoints)
	}

	ss := find[*mcsv1.ServiceImport](c1, "sample", "whereami-ss")
	if ss == nil || ss.Spec.Type != mcsv1.Headless {
		t.Fatalf("whereami-ss import = %+v, want Headless", ss)
	}
	slice := find[*discoveryv1.EndpointSlice](c1, "sample", "whereami-ss-c2")
	var hosts []string
	for _, ep := range slice.Endpoints {
		hosts = append(hosts, *ep.Hostname+"="+ep.Addresses[0])
	}
	if !slices.Equal(hosts, []string{"whereami-0=10.9.1.6", "whereami-1=10.9.2.8"}) {
		t.Errorf("headless endpoints = %v", hosts)
	}
	// ServiceExports are written only where git declares them.
	if find[*mcsv1.ServiceExport](c1, "sample", "whereami-cs") != nil {
		t.Error("c1 got a ServiceExport it does not declare")
	}
	if find[*mcsv1.ServiceExport](p.Objects("c2"), "sample", "whereami-cs") == nil {
		t.Error("c2 has no ServiceExport for whereami-cs")
	}
	if p.Allocation("c1") != nil {
		t.Error("allocations without globalnet")
	}
}

func TestAddingAClusterMovesNoAllocation(t *testing.T) {
	cs, obs := loadExample(t, "three-clusters")
	before := mustCompute(t, cs, obs)
	held := heldBy(before, obs)

	grown := cs.DeepCopy()
	// "c0" sorts before every existing cluster: without stickiness it would take the
	// first block and shift everyone.
	grown.Spec.Clusters = append(grown.Spec.Clusters, straitv1.ClusterSpec{
		Name: "c0", PodCIDRs: []string{"10.40.0.0/16"}, ServiceCIDRs: []string{"10.140.0.0/16"}})
	after := mustCompute(t, grown, held)

	for _, c := range before.Clusters() {
		b, a := before.Allocation(c), after.Allocation(c)
		if b.GlobalCIDR != a.GlobalCIDR {
			t.Errorf("cluster %s moved from %s to %s", c, b.GlobalCIDR, a.GlobalCIDR)
		}
		if !slices.Equal(b.EgressIPs, a.EgressIPs) {
			t.Errorf("cluster %s egress IPs moved", c)
		}
		for k, ip := range b.Services {
			if a.Services[k] != ip {
				t.Errorf("cluster %s service %s moved from %s to %s", c, k, ip, a.Services[k])
			}
		}
		for k, ip := range b.Endpoints {
			if a.Endpoints[k] != ip {
				t.Errorf("cluster %s endpoint %s moved from %s to %s", c, k, ip, a.Endpoints[k])
			}
		}
	}
	if n := after.Allocation("c0").GlobalCIDR; n.Overlaps(before.Allocation("c1").GlobalCIDR) || !n.IsValid() {
		t.Errorf("c0 got %s", n)
	}
	// The same change computed without what members hold does move c1: the test above
	// would catch an IPAM that ignored previous allocations.
	fresh := mustCompute(t, grown, obs)
	if fresh.Allocation("c1").GlobalCIDR == before.Allocation("c1").GlobalCIDR {
		t.Fatal("test is vacuous: a fresh allocation keeps c1 where it was anyway")
	}
}

func TestRebuiltHubRenumbersNothing(t *testing.T) {
	cs, obs := loadExample(t, "three-clusters")
	first := mustCompute(t, cs, obs)
	// Reorder the clusters in git too: order must not matter either.
	shuffled := cs.DeepCopy()
	slices.Reverse(shuffled.Spec.Clusters)
	again := mustCompute(t, shuffled, heldBy(first, obs))
	for _, c := range first.Clusters() {
		if first.Allocation(c).GlobalCIDR != again.Allocation(c).GlobalCIDR {
			t.Errorf("cluster %s renumbered", c)
		}
	}
	a, _ := Render(first, nil, FormatYAML)
	b, _ := Render(again, nil, FormatYAML)
	if string(a) != string(b) {
		t.Error("a rebuilt hub renders different objects")
	}
}

func TestServiceIPsAreSticky(t *testing.T) {
	cs, obs := loadExample(t, "three-clusters")
	first := mustCompute(t, cs, obs)
	held := heldBy(first, obs)
	// Export a new service that sorts first in c1; existing global IPs stay put.
	c1 := held["c1"]
	c1.Services = append(c1.Services, corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "aaa", Namespace: "shop"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.110.0.99", Ports: []corev1.ServicePort{{Port: 80}}}})
	grown := cs.DeepCopy()
	grown.Spec.Exports = append(grown.Spec.Exports, straitv1.ExportSpec{Namespace: "shop", Name: "aaa", Clusters: []string{"c1"}})
	after := mustCompute(t, grown, held)
	if got, want := after.Allocation("c1").Services["shop/cart"], first.Allocation("c1").Services["shop/cart"]; got != want {
		t.Errorf("shop/cart moved from %s to %s", want, got)
	}
	if !after.Allocation("c1").Services["shop/aaa"].IsValid() {
		t.Error("shop/aaa got no global IP")
	}
}

// TestNewExportTakesNoPodsAddress: a new service exported where a headless service's
// pods hold global IPs gets a free address, not one of theirs (services used to be
// numbered before the pods' addresses were claimed back).
func TestNewExportTakesNoPodsAddress(t *testing.T) {
	cs, obs := loadExample(t, "globalnet")
	first := mustCompute(t, cs, obs)
	held := heldBy(first, obs)
	g2 := held["g2"]
	g2.Services = append(g2.Services, svc("sample", "whereami-new", "10.77.0.99", corev1.ServicePort{Port: 80}))
	grown := cs.DeepCopy()
	grown.Spec.Exports = append(grown.Spec.Exports, straitv1.ExportSpec{Namespace: "sample", Name: "whereami-new", Clusters: []string{"g2"}})
	after := mustCompute(t, grown, held)
	b, a := first.Allocation("g2"), after.Allocation("g2")
	if len(b.Endpoints) == 0 {
		t.Fatal("test is vacuous: no headless endpoints with global IPs in g2")
	}
	for k, ip := range b.Endpoints {
		if a.Endpoints[k] != ip {
			t.Errorf("endpoint %s moved from %s to %s", k, ip, a.Endpoints[k])
		}
		if a.Services["sample/whereami-new"] == ip {
			t.Errorf("the new export took %s, held by endpoint %s", ip, k)
		}
	}
	if !a.Services["sample/whereami-new"].IsValid() {
		t.Error("sample/whereami-new got no global IP")
	}
}

func svc(ns, name, clusterIP string, ports ...corev1.ServicePort) corev1.Service {
	return corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{ClusterIP: clusterIP, Ports: ports}}
}

func export(ns, name string, at time.Time) mcsv1.ServiceExport {
	return mcsv1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(at)}}
}

func TestConflictOldestExportWins(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "web"}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	obs := Observed{
		"c1": {
			Services:       []corev1.Service{svc("app", "web", "None", corev1.ServicePort{Name: "http", Port: 80})},
			ServiceExports: []mcsv1.ServiceExport{export("app", "web", t0.Add(time.Hour))}},
		"c2": {
			Services:       []corev1.Service{svc("app", "web", "10.99.0.5", corev1.ServicePort{Name: "http", Port: 80})},
			ServiceExports: []mcsv1.ServiceExport{export("app", "web", t0)}},
	}
	p := mustCompute(t, cs, obs)
	si := find[*mcsv1.ServiceImport](p.Objects("c1"), "app", "web")
	if si.Spec.Type != mcsv1.ClusterSetIP || len(si.Status.Clusters) != 1 || si.Status.Clusters[0].Cluster != "c2" {
		t.Fatalf("import = %+v, want ClusterSetIP from c2 only (c2's export is older)", si)
	}
	conds := p.ServiceExportConditions("c1")[types.NamespacedName{Namespace: "app", Name: "web"}]
	conflict := conds[2]
	if conflict.Type != "Conflict" || conflict.Status != metav1.ConditionTrue || conflict.Reason != "TypeConflict" {
		t.Errorf("c1's Conflict condition = %+v", conflict)
	}
	// The MCS API asks for the condition on every export of the conflict: the oldest
	// one says so too, and stays Ready.
	winner := p.ServiceExportConditions("c2")[types.NamespacedName{Namespace: "app", Name: "web"}]
	if winner[2].Status != metav1.ConditionTrue || winner[2].Reason != "TypeConflict" || !strings.Contains(winner[2].Message, "c1") {
		t.Errorf("c2's Conflict condition = %+v", winner[2])
	}
	if winner[1].Status != metav1.ConditionTrue {
		t.Errorf("c2's Ready condition = %+v, want True: its export is the import", winner[1])
	}
	if conds[1].Status != metav1.ConditionFalse {
		t.Errorf("c1's Ready condition = %+v, want False: it is left out", conds[1])
	}
	if p.Status.Summary.Conflicts != 1 || p.Status.Exports[0].Conflict == "" {
		t.Errorf("status = %+v", p.Status.Exports)
	}
}

func TestPortUnionAndPortConflict(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "web"}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	obs := Observed{
		"c1": {
			Services: []corev1.Service{svc("app", "web", "10.88.0.5",
				corev1.ServicePort{Name: "http", Port: 80}, corev1.ServicePort{Name: "metrics", Port: 9090})},
			ServiceExports: []mcsv1.ServiceExport{export("app", "web", t0)}},
		"c2": {
			Services: []corev1.Service{svc("app", "web", "10.99.0.5",
				corev1.ServicePort{Name: "http", Port: 8080}, corev1.ServicePort{Name: "grpc", Port: 9000})},
			ServiceExports: []mcsv1.ServiceExport{export("app", "web", t0.Add(time.Minute))}},
	}
	p := mustCompute(t, cs, obs)
	si := find[*mcsv1.ServiceImport](p.Objects("c2"), "app", "web")
	var got []string
	for _, sp := range si.Spec.Ports {
		got = append(got, sp.Name)
	}
	if !slices.Equal(got, []string{"http", "grpc", "metrics"}) || si.Spec.Ports[0].Port != 80 {
		t.Errorf("ports = %+v, want the union with http from the older export (80)", si.Spec.Ports)
	}
	c := p.ServiceExportConditions("c2")[types.NamespacedName{Namespace: "app", Name: "web"}][2]
	if c.Reason != "PortConflict" || c.Status != metav1.ConditionTrue {
		t.Errorf("c2's Conflict = %+v", c)
	}
	if len(si.Status.Clusters) != 2 {
		t.Errorf("a port conflict must not drop the cluster: %+v", si.Status.Clusters)
	}
}

func TestMissingServiceIsNotValid(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "web", Clusters: []string{"c1"}}}
	p := mustCompute(t, cs, Observed{})
	c := p.ServiceExportConditions("c1")[types.NamespacedName{Namespace: "app", Name: "web"}][0]
	if c.Type != "Valid" || c.Status != metav1.ConditionFalse || c.Reason != "NoService" {
		t.Errorf("Valid = %+v", c)
	}
	if find[*mcsv1.ServiceImport](p.Objects("c2"), "app", "web") != nil {
		t.Error("an export without a service was imported")
	}
	if got := p.Status.Summary.Invalid; got != 1 {
		t.Errorf("summary.invalid = %d, want 1", got)
	}
}

func TestMemberExportsPolicy(t *testing.T) {
	member := mcsv1.ServiceExport{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app"}}
	obs := Observed{"c1": {
		Services:       []corev1.Service{svc("app", "web", "10.88.0.5", corev1.ServicePort{Port: 80})},
		ServiceExports: []mcsv1.ServiceExport{member}}}
	cs := twoClusters()
	if p := mustCompute(t, cs, obs); find[*mcsv1.ServiceImport](p.Objects("c2"), "app", "web") != nil {
		t.Error("Declared policy imported a ServiceExport made in the member")
	}
	cs.Spec.ExportPolicy = straitv1.ExportPolicyMemberExports
	p := mustCompute(t, cs, obs)
	if find[*mcsv1.ServiceImport](p.Objects("c2"), "app", "web") == nil {
		t.Error("MemberExports policy ignored the member's ServiceExport")
	}
	if find[*mcsv1.ServiceExport](p.Objects("c1"), "app", "web") != nil {
		t.Error("the hub must not take over a ServiceExport a person made")
	}
}

func TestHeadlessNotReadyEndpoints(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "db", Name: "pg"}}
	no, yes := false, true
	slice := discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "pg-1", Namespace: "db", Labels: map[string]string{discoveryv1.LabelServiceName: "pg"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.9.0.1"}, Hostname: ptr("pg-0"), Conditions: discoveryv1.EndpointConditions{Ready: &yes}},
			{Addresses: []string{"10.9.0.2"}, Hostname: ptr("pg-1"), Conditions: discoveryv1.EndpointConditions{Ready: &no}},
		}}
	service := svc("db", "pg", "None", corev1.ServicePort{Name: "pg", Port: 5432})
	obs := Observed{"c2": {Services: []corev1.Service{service}, EndpointSlices: []discoveryv1.EndpointSlice{slice}}}
	s := find[*discoveryv1.EndpointSlice](mustCompute(t, cs, obs).Objects("c1"), "db", "pg-c2")
	if len(s.Endpoints) != 1 || *s.Endpoints[0].Hostname != "pg-0" {
		t.Errorf("endpoints = %+v, want only the ready pg-0", s.Endpoints)
	}
	obs["c2"].Services[0].Spec.PublishNotReadyAddresses = true
	s = find[*discoveryv1.EndpointSlice](mustCompute(t, cs, obs).Objects("c1"), "db", "pg-c2")
	if len(s.Endpoints) != 2 || *s.Endpoints[1].Conditions.Ready {
		t.Errorf("with publishNotReadyAddresses, endpoints = %+v, want both, pg-1 not ready", s.Endpoints)
	}
}

func TestInvalidClusterSetGivesNoPlan(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Clusters[1].PodCIDRs[0] = "10.8.0.0/16"
	p, errs := Compute(cs, nil)
	if p != nil || len(errs) == 0 {
		t.Fatalf("Compute of an invalid ClusterSet = %v, %v", p, errs)
	}
}

func TestGlobalnetExhaustionIsAnError(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, ClusterSize: 16, ClusterEgressIPs: 4}
	obs := Observed{"c1": {}}
	for i := 0; i < 12; i++ {
		name := string(rune('a'+i)) + "svc"
		obs["c1"].Services = append(obs["c1"].Services, svc("app", name, "10.88.1."+string(rune('0'+i%10)), corev1.ServicePort{Port: 80}))
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: "app", Name: name, Clusters: []string{"c1"}})
	}
	_, errs := Compute(cs, obs)
	if len(errs) != 1 || errs[0].Field != "spec.globalnet.clusterSize" {
		t.Fatalf("errs = %v, want one error on spec.globalnet.clusterSize", errs)
	}
}

// With the ipsec cable every member gets its copy of the pre-shared key, an object of the
// plan like any other, with the data left to the hub.
func TestIPsecPSKSecretIsPlanned(t *testing.T) {
	cs := twoClusters()
	p := mustCompute(t, cs, nil)
	if p.IPsecPSKSource() != nil {
		t.Errorf("wireguard plan names a PSK source %v", p.IPsecPSKSource())
	}
	for _, c := range p.Clusters() {
		if s := find[*corev1.Secret](p.Objects(c), straitv1.SystemNamespace, IPsecPSKSecretName); s != nil {
			t.Errorf("wireguard member %s gets a PSK Secret", c)
		}
	}

	cs.Spec.Cable = straitv1.CableSpec{Driver: straitv1.CableIPsec, PSKSecretRef: &meta.LocalObjectReference{Name: "ipsec-psk"}}
	p = mustCompute(t, cs, nil)
	if got, want := p.IPsecPSKSource(), (&types.NamespacedName{Namespace: cs.Namespace, Name: "ipsec-psk"}); got == nil || *got != *want {
		t.Errorf("PSK source = %v, want %v", got, want)
	}
	for _, c := range p.Clusters() {
		s := find[*corev1.Secret](p.Objects(c), straitv1.SystemNamespace, IPsecPSKSecretName)
		if s == nil {
			t.Fatalf("ipsec member %s gets no PSK Secret", c)
		}
		if s.Type != corev1.SecretTypeOpaque || len(s.Data) != 0 || len(s.StringData) != 0 {
			t.Errorf("member %s's PSK Secret: type %q, data %v; want Opaque without data", c, s.Type, s.Data)
		}
		if s.Labels[straitv1.LabelClusterSet] != ClusterSetLabel(p.clusterSet) || s.Annotations[straitv1.AnnotationTargetCluster] != c {
			t.Errorf("member %s's PSK Secret lacks the labels the hub prunes by: %v %v", c, s.Labels, s.Annotations)
		}
	}
}

// Exports whose port sets differ (the MCS conformance suite's "should expose the union
// of the constituent service ports and raise a conflict": c2 has the same tcp port and
// an SCTP one, not c1's udp) give an import with the union and a PortConflict on both,
// each message naming what which cluster lacks; the same ports everywhere, none.
func TestDifferentPortSetsAreAConflictOnEveryExport(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "hello"}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tcp := corev1.ServicePort{Name: "tcp", Port: 42, Protocol: corev1.ProtocolTCP}
	udp := corev1.ServicePort{Name: "udp", Port: 42, Protocol: corev1.ProtocolUDP}
	stcp := corev1.ServicePort{Name: "stcp", Port: 142, Protocol: corev1.ProtocolSCTP}
	obs := func(c2Ports ...corev1.ServicePort) Observed {
		return Observed{
			"c1": {Services: []corev1.Service{svc("app", "hello", "10.88.0.5", tcp, udp)}, ServiceExports: []mcsv1.ServiceExport{export("app", "hello", t0)}},
			"c2": {Services: []corev1.Service{svc("app", "hello", "10.99.0.5", c2Ports...)},
				ServiceExports: []mcsv1.ServiceExport{export("app", "hello", t0.Add(time.Second))}},
		}
	}
	k := types.NamespacedName{Namespace: "app", Name: "hello"}
	p := mustCompute(t, cs, obs(tcp, stcp))
	if si := find[*mcsv1.ServiceImport](p.Objects("c1"), "app", "hello"); len(si.Spec.Ports) != 3 {
		t.Errorf("import ports %+v, want the union tcp, udp, stcp", si.Spec.Ports)
	}
	for c, lacks := range map[string]string{"c1": `"stcp" (142/SCTP)`, "c2": `"udp" (42/UDP)`} {
		cond := p.ServiceExportConditions(c)[k][2]
		if cond.Status != metav1.ConditionTrue || cond.Reason != "PortConflict" || !strings.Contains(cond.Message, "this export lacks "+lacks) {
			t.Errorf("%s's Conflict = %s %s %q, want True, PortConflict, naming %s", c, cond.Status, cond.Reason, cond.Message, lacks)
		}
	}
	p = mustCompute(t, cs, obs(tcp, udp))
	for _, c := range []string{"c1", "c2"} {
		if cond := p.ServiceExportConditions(c)[k][2]; cond.Status != metav1.ConditionFalse {
			t.Errorf("the same ports in both: %s's Conflict = %+v, want False", c, cond)
		}
	}
}

// A headless endpoint without hostname (a Deployment's pod) has none in the import
// either: DNS names it by its dashed address, as the MCS DNS spec and its conformance
// suite want, not by its pod's name.
func TestHeadlessEndpointWithoutHostnameStaysWithout(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "hello", Clusters: []string{"c2"}}}
	sl := podSlice("app", "hello", "hello-a", nil, map[string]bool{"10.9.0.7": true})
	sl.Endpoints[0].TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: "hello-d468bc586-cwxqg"}
	p := mustCompute(t, cs, Observed{"c2": {Services: []corev1.Service{svc("app", "hello", "None", corev1.ServicePort{Name: "tcp", Port: 42})},
		EndpointSlices: []discoveryv1.EndpointSlice{sl}}})
	got := find[*discoveryv1.EndpointSlice](p.Objects("c1"), "app", "hello-c2")
	if len(got.Endpoints) != 1 || got.Endpoints[0].Hostname != nil {
		t.Errorf("imported endpoints %+v, want 10.9.0.7 without a hostname", got.Endpoints)
	}
}
