package source

import (
	"net/netip"
	"reflect"
	"testing"
	"unsafe"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/resolver"
)

func peer(cluster, state string, cond *metav1.ConditionStatus) straitv1.Peer {
	p := straitv1.Peer{Spec: straitv1.PeerSpec{ClusterID: cluster}, Status: straitv1.PeerStatus{State: state}}
	if cond != nil {
		p.Status.Conditions = []metav1.Condition{{Type: straitv1.ConditionConnected, Status: *cond}}
	}
	return p
}

func TestConnected(t *testing.T) {
	f, tr, u := metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionUnknown
	got := map[string]bool{}
	for _, p := range []straitv1.Peer{
		peer("no-status", "", nil),
		peer("true", "Connected", &tr),
		peer("false", "Connected", &f),
		peer("unknown", "", &u),
		peer("connecting", "Connecting", nil),
		peer("error", "Error", nil),
	} {
		got[p.Spec.ClusterID] = peerConnected(&p)
	}
	want := map[string]bool{"no-status": true, "true": true, "false": false, "unknown": true, "connecting": false, "error": false}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func slice(ns, svc, cluster string, eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
	return discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-" + cluster, Labels: map[string]string{
			mcsv1.LabelServiceName: svc, mcsv1.LabelSourceCluster: cluster}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
	}
}

func ep(ip string, ready *bool, host string) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	if host != "" {
		e.Hostname = &host
	}
	return e
}

func TestBuildFromObjects(t *testing.T) {
	yes, no := true, false
	st := &State{
		Membership: &straitv1.Membership{Spec: straitv1.MembershipSpec{ClusterID: "c1",
			DNS: straitv1.DNSSpec{ExtraZones: []string{"example.org"}, TTLSeconds: 9}}},
		Peers: []straitv1.Peer{peer("c2", "", nil)},
		Imports: []mcsv1.ServiceImport{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP,
				Ports: []mcsv1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Spec: mcsv1.ServiceImportSpec{Type: mcsv1.Headless}},
		},
		Slices: []discoveryv1.EndpointSlice{
			slice("shop", "web", "c1", ep("10.1.0.10", &no, "")),
			slice("shop", "web", "c2", ep("10.2.0.10", nil, "")),
			slice("shop", "web", "c3", ep("10.3.0.10", &yes, "")),
			slice("shop", "db", "c2", ep("10.2.1.1", &no, "db-0"), ep("10.2.1.2", &yes, "db-1")),
			slice("shop", "orphan", "c2", ep("10.2.9.9", &yes, "")),
		},
	}
	snap, err := Build(st, Overrides{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := snap.Config()
	if cfg.LocalCluster != "c1" || cfg.TTL != 9 || !cfg.ClusterNames || !reflect.DeepEqual(cfg.Zones, []string{"clusterset.local.", "example.org"}) {
		t.Errorf("config %+v: want local c1, TTL 9, cluster names on, zones clusterset.local. and example.org", cfg)
	}
	ask := func(name string) []string {
		var out []string
		a := snap.Resolve(name, dns.TypeA)
		out = append(out, dns.RcodeToString[a.Rcode])
		for _, rr := range a.Answer {
			out = append(out, rr.(*dns.A).A.String())
		}
		return out
	}
	// c1 is not ready, c3 has no Peer: c2 (ready unset counts as ready) answers.
	if got := ask("web.shop.svc.clusterset.local."); !reflect.DeepEqual(got, []string{"NOERROR", "10.2.0.10"}) {
		t.Errorf("web: %v", got)
	}
	// A not-ready headless endpoint means publishNotReadyAddresses.
	if got := ask("db.shop.svc.example.org."); !reflect.DeepEqual(got, []string{"NOERROR", "10.2.1.1", "10.2.1.2"}) {
		t.Errorf("db: %v", got)
	}
	if got := ask("orphan.shop.svc.clusterset.local."); !reflect.DeepEqual(got, []string{"NXDOMAIN"}) {
		t.Errorf("a slice without import: %v", got)
	}

	off, ttl := false, uint32(0)
	snap, err = Build(st, Overrides{ClusterNames: &off, TTL: &ttl, ExtraZones: []string{"x.test"}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if cfg = snap.Config(); cfg.ClusterNames || cfg.TTL != 0 || len(cfg.Zones) != 3 || cfg.Serial != 2 {
		t.Errorf("overrides: %+v", cfg)
	}
}

// TestRecordKeepsWhatAnswersNeed turns a slice with everything the hub or Kubernetes may
// set into its record: only the answers' inputs are kept, endpoints by address, and
// the values that repeat across slices are shared, not copied.
func TestRecordKeepsWhatAnswersNeed(t *testing.T) {
	yes, no := true, false
	full := slice("shop", "web", "c2", ep("10.2.0.20", &no, "web-1"), ep("10.2.0.10", &yes, "web-0"), ep("not-an-ip", &yes, ""))
	full.Endpoints = append(full.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.2.0.5"}})
	full.Labels["extra"] = "x"
	full.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"}
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "hub"}}
	full.ResourceVersion = "42"
	node := "node-1"
	full.Endpoints[0].NodeName = &node
	full.Endpoints[0].TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: "web-0"}
	name, port, proto := "http", int32(80), corev1.ProtocolTCP
	full.Ports = []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}, {Port: &port}}
	in := newInterner()
	got := in.record(&full).(*sliceRecord)
	want := &sliceRecord{objectKey: objectKey{"shop", "web-c2"}, service: "web", src: resolver.ClusterSource{
		Cluster: "c2", Key: "-c2",
		Ports: []resolver.Port{{Name: "http", Protocol: "TCP", Port: 80}, {Protocol: "TCP", Port: 80}},
		Endpoints: []resolver.Endpoint{
			{Addr: netip.MustParseAddr("10.2.0.5"), Ready: true},
			{Addr: netip.MustParseAddr("10.2.0.10"), Hostname: "web-0", Ready: true},
			{Addr: netip.MustParseAddr("10.2.0.20"), Hostname: "web-1"},
		},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("record:\n got %+v\nwant %+v", got, want)
	}
	other := slice("shop", "db", "c2", ep("10.2.1.1", &yes, ""))
	other.Ports = full.Ports
	o := in.record(&other).(*sliceRecord)
	if &o.src.Ports[0] != &got.src.Ports[0] || unsafe.StringData(o.src.Cluster) != unsafe.StringData(got.src.Cluster) ||
		unsafe.StringData(o.namespace) != unsafe.StringData(got.namespace) || unsafe.StringData(o.src.Key) != unsafe.StringData(got.src.Key) {
		t.Error("two slices' port lists, cluster names, namespaces or keys are copies, not one interned value")
	}
	if odd := in.sliceKey("web", "webx-c2"); odd != "webx-c2" || sliceName("web", got.src.Key) != "web-c2" {
		t.Errorf("slice keys: %q for webx-c2 of web, name %q for %q", odd, sliceName("web", got.src.Key), got.src.Key)
	}
}
