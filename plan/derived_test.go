package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// podSlice is the EndpointSlice Kubernetes keeps for a service: the pods' addresses,
// ready or not, and the target ports by name.
func podSlice(ns, service, name string, ports []discoveryv1.EndpointPort, ready map[string]bool) discoveryv1.EndpointSlice {
	sl := discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: ports}
	for _, ip := range slices.Sorted(func(yield func(string) bool) {
		for ip := range ready {
			if !yield(ip) {
				return
			}
		}
	}) {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready[ip])}})
	}
	return sl
}

func derivedOf(objs []client.Object, ns, name string) (*corev1.Service, map[string][]string) {
	svc := find[*corev1.Service](objs, ns, DerivedServiceName(name))
	addrs := map[string][]string{}
	for _, o := range objs {
		sl, ok := o.(*discoveryv1.EndpointSlice)
		if !ok || sl.Labels[discoveryv1.LabelServiceName] != DerivedServiceName(name) {
			continue
		}
		addrs[sl.Labels[straitv1.LabelSourceCluster]] = nil
		for _, ep := range sl.Endpoints {
			addrs[sl.Labels[straitv1.LabelSourceCluster]] = append(addrs[sl.Labels[straitv1.LabelSourceCluster]], ep.Addresses[0])
		}
	}
	return svc, addrs
}

func TestClusterSetIPImportGetsADerivedServiceOverEveryClustersReadyPods(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "dns"}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	affinity := &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr(int32(60))}}
	mk := func(ip string) corev1.Service {
		s := svc("app", "dns", ip, corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
			corev1.ServicePort{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP})
		s.Spec.SessionAffinity, s.Spec.SessionAffinityConfig = corev1.ServiceAffinityClientIP, affinity
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		s.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyLocal)
		s.Spec.TrafficDistribution = ptr(corev1.ServiceTrafficDistributionPreferClose)
		return s
	}
	targets := []discoveryv1.EndpointPort{{Name: ptr("dns"), Port: ptr(int32(5353)), Protocol: ptr(corev1.ProtocolUDP)},
		{Name: ptr("dns-tcp"), Port: ptr(int32(5353)), Protocol: ptr(corev1.ProtocolTCP)}}
	obs := Observed{
		"c1": {Services: []corev1.Service{mk("10.88.0.10")},
			EndpointSlices: []discoveryv1.EndpointSlice{podSlice("app", "dns", "dns-a", targets, map[string]bool{"10.8.1.1": true, "10.8.1.2": false})},
			ServiceExports: []mcsv1.ServiceExport{export("app", "dns", t0)}},
		"c2": {Services: []corev1.Service{mk("10.99.0.10")},
			EndpointSlices: []discoveryv1.EndpointSlice{podSlice("app", "dns", "dns-b", targets, map[string]bool{"10.9.1.1": true, "10.9.1.2": true})},
			ServiceExports: []mcsv1.ServiceExport{export("app", "dns", t0.Add(time.Minute))}},
	}
	p := mustCompute(t, cs, obs)
	for _, member := range []string{"c1", "c2"} {
		objs := p.Objects(member)
		d, addrs := derivedOf(objs, "app", "dns")
		if d == nil {
			t.Fatalf("%s: no derived Service", member)
		}
		if d.Spec.Selector != nil || d.Spec.ClusterIP != "" || d.Labels[straitv1.LabelServiceImport] != "dns" ||
			d.Labels[straitv1.LabelManagedBy] != straitv1.ManagedByHub || !strings.HasPrefix(d.Name, "strait-dns-") {
			t.Errorf("%s: derived Service %s = %+v, want no selector, no cluster IP, Strait's name and labels", member, d.Name, d.ObjectMeta)
		}
		if len(d.Spec.Ports) != 2 || d.Spec.Ports[0].Protocol != corev1.ProtocolTCP || d.Spec.Ports[1].Protocol != corev1.ProtocolUDP {
			t.Errorf("%s: ports = %+v, want 53/TCP and 53/UDP", member, d.Spec.Ports)
		}
		if d.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || *d.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds != 60 ||
			!slices.Equal(d.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) {
			t.Errorf("%s: affinity/families = %+v", member, d.Spec)
		}
		if d.Spec.InternalTrafficPolicy != nil || d.Spec.TrafficDistribution != nil {
			t.Errorf("%s: the derived Service must route to every cluster: %+v", member, d.Spec)
		}
		want := map[string][]string{"c1": {"10.8.1.1"}, "c2": {"10.9.1.1", "10.9.1.2"}}
		for c, w := range want {
			if !slices.Equal(addrs[c], w) {
				t.Errorf("%s: derived endpoints of %s = %v, want the ready pods %v", member, c, addrs[c], w)
			}
		}
		for _, o := range objs {
			if sl, ok := o.(*discoveryv1.EndpointSlice); ok && sl.Labels[straitv1.LabelServiceImport] != "" {
				if _, mcs := sl.Labels[mcsv1.LabelSourceCluster]; mcs {
					t.Errorf("%s: derived slice %s carries the MCS source-cluster label that strait dns reads", member, sl.Name)
				}
				if len(sl.Ports) != 2 || *sl.Ports[0].Port != 5353 {
					t.Errorf("%s: derived slice %s ports = %+v, want the target ports", member, sl.Name, sl.Ports)
				}
			}
		}
		si := find[*mcsv1.ServiceImport](objs, "app", "dns")
		if len(si.Spec.IPs) != 0 {
			t.Errorf("%s: the hub must leave spec.ips to the member: %v", member, si.Spec.IPs)
		}
		if si.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || si.Spec.SessionAffinityConfig == nil ||
			*si.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyLocal ||
			*si.Spec.TrafficDistribution != corev1.ServiceTrafficDistributionPreferClose || len(si.Spec.IPFamilies) != 1 {
			t.Errorf("%s: import spec = %+v, want the exported service's affinity, families and traffic policies", member, si.Spec)
		}
	}
}

func TestDerivedSlicesUnderGlobalnetHoldTheServicesGlobalIP(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Clusters[1].PodCIDRs, cs.Spec.Clusters[1].ServiceCIDRs = cs.Spec.Clusters[0].PodCIDRs, cs.Spec.Clusters[0].ServiceCIDRs
	cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true}
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "web", Clusters: []string{"c2"}}}
	targets := []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}}
	obs := Observed{"c2": {Services: []corev1.Service{svc("app", "web", "10.88.0.7", corev1.ServicePort{Name: "http", Port: 80})},
		EndpointSlices: []discoveryv1.EndpointSlice{podSlice("app", "web", "web-a", targets, map[string]bool{"10.8.3.3": true})}}}
	p := mustCompute(t, cs, obs)
	global := p.Allocation("c2").Services["app/web"].String()
	_, remote := derivedOf(p.Objects("c1"), "app", "web")
	if !slices.Equal(remote["c2"], []string{global}) {
		t.Errorf("c1 sees c2's endpoints as %v, want the service's global IP %s", remote["c2"], global)
	}
	_, local := derivedOf(p.Objects("c2"), "app", "web")
	if !slices.Equal(local["c2"], []string{"10.8.3.3"}) {
		t.Errorf("c2 sees its own endpoints as %v, want its pod IP", local["c2"])
	}
}

func TestHeadlessImportHasNoDerivedService(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "db"}}
	obs := Observed{"c1": {Services: []corev1.Service{svc("app", "db", "None", corev1.ServicePort{Name: "pg", Port: 5432})}}}
	if d, _ := derivedOf(mustCompute(t, cs, obs).Objects("c2"), "app", "db"); d != nil {
		t.Errorf("headless import got a derived Service %s", d.Name)
	}
}

func TestExportedLabelsConflictIsOnEveryExportAndTheOldestWins(t *testing.T) {
	cs := twoClusters()
	cs.Spec.ExportPolicy = straitv1.ExportPolicyMemberExports
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	se1, se2 := export("app", "web", t0), export("app", "web", t0.Add(time.Second))
	se1.Spec = mcsv1.ServiceExportSpec{ExportedLabels: map[string]string{"tier": "gold"}, ExportedAnnotations: map[string]string{"team": "a"}}
	se2.Spec = mcsv1.ServiceExportSpec{ExportedLabels: map[string]string{"tier": "silver"}, ExportedAnnotations: map[string]string{"team": "a"}}
	s2 := svc("app", "web", "10.99.0.5", corev1.ServicePort{Name: "http", Port: 80})
	s2.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	obs := Observed{
		"c1": {Services: []corev1.Service{svc("app", "web", "10.88.0.5", corev1.ServicePort{Name: "http", Port: 80})}, ServiceExports: []mcsv1.ServiceExport{se1}},
		"c2": {Services: []corev1.Service{s2}, ServiceExports: []mcsv1.ServiceExport{se2}},
	}
	p := mustCompute(t, cs, obs)
	si := find[*mcsv1.ServiceImport](p.Objects("c2"), "app", "web")
	if si.Labels["tier"] != "gold" || si.Annotations["team"] != "a" || si.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("import labels %v, annotations %v, affinity %s: want the oldest export's", si.Labels, si.Annotations, si.Spec.SessionAffinity)
	}
	k := types.NamespacedName{Namespace: "app", Name: "web"}
	for _, c := range []string{"c1", "c2"} {
		cond := p.ServiceExportConditions(c)[k][2]
		if cond.Status != metav1.ConditionTrue || cond.Reason != "SessionAffinityConflict,LabelsConflict" {
			t.Errorf("%s's Conflict = %s %s (%s), want True with both reasons", c, cond.Status, cond.Reason, cond.Message)
		}
		if ready := p.ServiceExportConditions(c)[k][1]; ready.Status != metav1.ConditionTrue {
			t.Errorf("%s's Ready = %+v: a property conflict keeps the cluster in the import", c, ready)
		}
	}
}

func TestExternalNameServiceIsNotValid(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "ext", Clusters: []string{"c1"}}}
	ext := svc("app", "ext", "", corev1.ServicePort{Name: "http", Port: 80})
	ext.Spec.Type, ext.Spec.ExternalName = corev1.ServiceTypeExternalName, "example.com"
	p := mustCompute(t, cs, Observed{"c1": {Services: []corev1.Service{ext}}})
	valid := p.ServiceExportConditions("c1")[types.NamespacedName{Namespace: "app", Name: "ext"}][0]
	if valid.Status != metav1.ConditionFalse || valid.Reason != string(mcsv1.ServiceExportReasonInvalidServiceType) {
		t.Errorf("Valid = %+v, want False/InvalidServiceType", valid)
	}
	if si := find[*mcsv1.ServiceImport](p.Objects("c2"), "app", "ext"); si != nil {
		t.Errorf("an ExternalName service was imported: %+v", si)
	}
}

func TestDerivedServiceNameIsALabelOfStraits(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, n := range []string{"web", long, long[:62] + "b", "a-" + strings.Repeat("b", 44) + "-cccc"} {
		d := DerivedServiceName(n)
		if len(d) > 63 || !strings.HasPrefix(d, "strait-") || strings.Contains(d, "--") {
			t.Errorf("DerivedServiceName(%q) = %q", n, d)
		}
	}
	if DerivedServiceName(long) == DerivedServiceName(long[:62]+"b") {
		t.Error("two names that the cut makes equal got one derived name")
	}
}

func TestDerivedServicePortsAreValidWhenTheUnionIsNot(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "web"}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// c1: one unnamed port; c2: the same port named, and a second one. The union has
	// "" 80/TCP, "http" 80/TCP and "metrics" 9090/TCP.
	obs := Observed{
		"c1": {Services: []corev1.Service{svc("app", "web", "10.88.0.5", corev1.ServicePort{Port: 80})},
			EndpointSlices: []discoveryv1.EndpointSlice{podSlice("app", "web", "web-a",
				[]discoveryv1.EndpointPort{{Name: ptr(""), Port: ptr(int32(8080))}}, map[string]bool{"10.8.1.1": true})},
			ServiceExports: []mcsv1.ServiceExport{export("app", "web", t0)}},
		"c2": {Services: []corev1.Service{svc("app", "web", "10.99.0.5", corev1.ServicePort{Name: "http", Port: 80},
			corev1.ServicePort{Name: "metrics", Port: 9090})},
			EndpointSlices: []discoveryv1.EndpointSlice{podSlice("app", "web", "web-b",
				[]discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8081))}, {Name: ptr("metrics"), Port: ptr(int32(9091))}},
				map[string]bool{"10.9.1.1": true})},
			ServiceExports: []mcsv1.ServiceExport{export("app", "web", t0.Add(time.Minute))}},
	}
	p := mustCompute(t, cs, obs)
	objs := p.Objects("c2")
	d, _ := derivedOf(objs, "app", "web")
	var got []string
	for _, sp := range d.Spec.Ports {
		got = append(got, fmt.Sprintf("%s=%d/%s", sp.Name, sp.Port, sp.Protocol))
	}
	// One port per port and protocol, every one named (a Service with several ports
	// needs names, and no two may be the same port and protocol).
	if want := []string{"tcp-80=80/TCP", "metrics=9090/TCP"}; !slices.Equal(got, want) {
		t.Fatalf("derived ports %v, want %v", got, want)
	}
	slicePorts := map[string][]string{}
	for _, o := range objs {
		if sl, ok := o.(*discoveryv1.EndpointSlice); ok && sl.Labels[discoveryv1.LabelServiceName] == d.Name {
			for _, ep := range sl.Ports {
				slicePorts[sl.Labels[straitv1.LabelSourceCluster]] = append(slicePorts[sl.Labels[straitv1.LabelSourceCluster]],
					fmt.Sprintf("%s=%d", *ep.Name, *ep.Port))
			}
		}
	}
	// Each cluster's target ports under the derived Service's names: kube-proxy pairs
	// them by name, so c1's unnamed port and c2's "http" both serve port 80.
	if want := []string{"tcp-80=8080"}; !slices.Equal(slicePorts["c1"], want) {
		t.Errorf("c1's derived slice ports %v, want %v", slicePorts["c1"], want)
	}
	if want := []string{"tcp-80=8081", "metrics=9091"}; !slices.Equal(slicePorts["c2"], want) {
		t.Errorf("c2's derived slice ports %v, want %v", slicePorts["c2"], want)
	}
}

func TestImportWithoutIPv4IsNotReadyForItsIPFamily(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "v6"}, {Namespace: "app", Name: "dual"}}
	v6 := svc("app", "v6", "fd00::10", corev1.ServicePort{Name: "http", Port: 80})
	v6.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	dual := svc("app", "dual", "10.88.0.11", corev1.ServicePort{Name: "http", Port: 80})
	dual.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
	p := mustCompute(t, cs, Observed{"c1": {Services: []corev1.Service{v6, dual}}})
	objs := p.Objects("c2")
	ready := func(name string) metav1.Condition {
		si := find[*mcsv1.ServiceImport](objs, "app", name)
		if si == nil || len(si.Status.Conditions) != 1 {
			t.Fatalf("import %s: %+v, want one Ready condition", name, si)
		}
		return si.Status.Conditions[0]
	}
	if c := ready("v6"); c.Status != metav1.ConditionFalse || c.Reason != string(mcsv1.ServiceImportReasonIPFamilyNotSupported) ||
		!strings.Contains(c.Message, "IPv6") {
		t.Errorf("IPv6-only import: Ready = %+v, want False, IPFamilyNotSupported, naming the family", c)
	}
	if d, _ := derivedOf(objs, "app", "v6"); d != nil {
		t.Errorf("IPv6-only import got a derived Service %s, which an IPv4 member's API server refuses", d.Name)
	}
	if c := ready("dual"); c.Status != metav1.ConditionTrue {
		t.Errorf("dual-stack import: Ready = %+v, want True", c)
	}
	d, _ := derivedOf(objs, "app", "dual")
	if d == nil || !slices.Equal(d.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol}) ||
		*d.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		t.Errorf("dual-stack import: derived Service %+v, want IPv4 single-stack (Strait routes IPv4)", d)
	}
}

// A port that a newer export defines otherwise (the same name, another number) is the
// oldest export's in the import: the newer cluster's pods are not behind it, so
// connections to it reach only the clusters that expose it (the MCS conformance suite's
// "should only route traffic to the cluster that exposes the port"); a port only the
// newer cluster has is its alone.
func TestDerivedSlicesServeOnlyThePortsTheClusterExposes(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "hello"}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	target := func(name string) []discoveryv1.EndpointPort {
		return []discoveryv1.EndpointPort{{Name: ptr(name), Port: ptr(int32(42)), Protocol: ptr(corev1.ProtocolTCP)}}
	}
	obs := Observed{
		"c1": {Services: []corev1.Service{svc("app", "hello", "10.88.0.5", corev1.ServicePort{Name: "tcp", Port: 42, Protocol: corev1.ProtocolTCP})},
			EndpointSlices: []discoveryv1.EndpointSlice{podSlice("app", "hello", "hello-a", target("tcp"), map[string]bool{"10.8.1.1": true})},
			ServiceExports: []mcsv1.ServiceExport{export("app", "hello", t0)}},
		"c2": {Services: []corev1.Service{svc("app", "hello", "10.99.0.5",
			corev1.ServicePort{Name: "tcp", Port: 4242, Protocol: corev1.ProtocolTCP},
			corev1.ServicePort{Name: "tcp2", Port: 4343, Protocol: corev1.ProtocolTCP})},
			EndpointSlices: []discoveryv1.EndpointSlice{podSlice("app", "hello", "hello-b",
				append(target("tcp"), target("tcp2")...), map[string]bool{"10.9.1.1": true})},
			ServiceExports: []mcsv1.ServiceExport{export("app", "hello", t0.Add(time.Minute))}},
	}
	objs := mustCompute(t, cs, obs).Objects("c1")
	d, _ := derivedOf(objs, "app", "hello")
	var got []string
	for _, sp := range d.Spec.Ports {
		got = append(got, fmt.Sprintf("%s=%d", sp.Name, sp.Port))
	}
	if want := []string{"tcp=42", "tcp2=4343"}; !slices.Equal(got, want) {
		t.Fatalf("derived ports %v, want %v", got, want)
	}
	ports := map[string][]string{}
	for _, o := range objs {
		if sl, ok := o.(*discoveryv1.EndpointSlice); ok && sl.Labels[discoveryv1.LabelServiceName] == d.Name {
			ports[sl.Labels[straitv1.LabelSourceCluster]] = nil
			for _, ep := range sl.Ports {
				ports[sl.Labels[straitv1.LabelSourceCluster]] = append(ports[sl.Labels[straitv1.LabelSourceCluster]], *ep.Name)
			}
		}
	}
	if !slices.Equal(ports["c1"], []string{"tcp"}) || !slices.Equal(ports["c2"], []string{"tcp2"}) {
		t.Errorf("derived slice ports %v, want c1 behind tcp (42) alone and c2 behind tcp2 (4343) alone", ports)
	}
}

// PreferLocal keeps an exporting member's clusterset IP on its own ready endpoints, and
// on every cluster's once it has none; members that do not export it balance over all.
func TestPreferLocalKeepsAnExportingMemberOnItsOwnEndpoints(t *testing.T) {
	cs := twoClusters()
	cs.Spec.Clusters = append(cs.Spec.Clusters, straitv1.ClusterSpec{Name: "c3", PodCIDRs: []string{"10.10.0.0/16"},
		ServiceCIDRs: []string{"10.110.0.0/16"}})
	cs.Spec.Exports = []straitv1.ExportSpec{{Namespace: "app", Name: "web", Clusters: []string{"c1", "c2"},
		ClusterSetIP: straitv1.ClusterSetIPPreferLocal}}
	targets := []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}}
	obs := func(c1Ready bool) Observed {
		return Observed{
			"c1": {Services: []corev1.Service{svc("app", "web", "10.88.0.5", corev1.ServicePort{Name: "http", Port: 80})},
				EndpointSlices: []discoveryv1.EndpointSlice{podSlice("app", "web", "web-a", targets, map[string]bool{"10.8.1.1": c1Ready})}},
			"c2": {Services: []corev1.Service{svc("app", "web", "10.99.0.5", corev1.ServicePort{Name: "http", Port: 80})},
				EndpointSlices: []discoveryv1.EndpointSlice{podSlice("app", "web", "web-b", targets, map[string]bool{"10.9.1.1": true})}},
		}
	}
	clustersIn := func(p *Plan, member string) []string {
		_, addrs := derivedOf(p.Objects(member), "app", "web")
		return slices.Sorted(maps.Keys(addrs))
	}
	p := mustCompute(t, cs, obs(true))
	for member, want := range map[string][]string{"c1": {"c1"}, "c2": {"c2"}, "c3": {"c1", "c2"}} {
		if got := clustersIn(p, member); !slices.Equal(got, want) {
			t.Errorf("%s's clusterset IP leads to %v, want %v", member, got, want)
		}
	}
	// c1's last endpoint not ready: c1 fails over to every cluster (c2's, and its own
	// empty slice); the others are unchanged.
	p = mustCompute(t, cs, obs(false))
	for member, want := range map[string][]string{"c1": {"c1", "c2"}, "c2": {"c2"}, "c3": {"c1", "c2"}} {
		if got := clustersIn(p, member); !slices.Equal(got, want) {
			t.Errorf("c1 not ready: %s's clusterset IP leads to %v, want %v", member, got, want)
		}
	}
	cs.Spec.Exports[0].ClusterSetIP = ""
	if got := clustersIn(mustCompute(t, cs, obs(true)), "c1"); !slices.Equal(got, []string{"c1", "c2"}) {
		t.Errorf("AllClusters (the default): c1's clusterset IP leads to %v, want both", got)
	}
}
