package source

import (
	"reflect"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/resolver"
)

// storeFixture is a state with member c1's Membership and a connected Peer c2, and a
// count of the changes it reported.
type storeFixture struct {
	t       *testing.T
	s       *state
	changes int
}

func newStoreFixture(t *testing.T) *storeFixture {
	f := &storeFixture{t: t}
	f.s = newState(newInterner(), func() { f.changes++ })
	f.apply(opAdd, &straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName},
		Spec: straitv1.MembershipSpec{ClusterID: "c1"}})
	p := peer("c2", "", nil)
	p.Namespace, p.Name = straitv1.SystemNamespace, "c2"
	f.apply(opAdd, &p)
	return f
}

func (f *storeFixture) apply(o op, objs ...any) {
	f.t.Helper()
	for _, obj := range objs {
		if err := f.s.apply(f.s.in.record(obj), o); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *storeFixture) snapshot() *resolver.Snapshot {
	return f.s.build(straitv1.SystemNamespace, Overrides{}, 1)
}

// ask is the rcode and addresses of an A question.
func ask(s *resolver.Snapshot, name string) []string {
	a := s.Resolve(name+".svc.clusterset.local.", dns.TypeA)
	out := []string{dns.RcodeToString[a.Rcode]}
	for _, rr := range a.Answer {
		out = append(out, rr.(*dns.A).A.String())
	}
	return out
}

func imported(ns, name string) *mcsv1.ServiceImport {
	return &mcsv1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mcsv1.ServiceImportSpec{Type: mcsv1.ClusterSetIP, Ports: []mcsv1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
}

func readySlice(ns, svc, cluster, ip string) *discoveryv1.EndpointSlice {
	yes := true
	sl := slice(ns, svc, cluster, ep(ip, &yes, ""))
	return &sl
}

func TestSlicesBeforeTheirImport(t *testing.T) {
	f := newStoreFixture(t)
	f.apply(opAdd, readySlice("shop", "web", "c2", "10.2.0.10"))
	if got := ask(f.snapshot(), "web.shop"); !reflect.DeepEqual(got, []string{"NXDOMAIN"}) {
		t.Errorf("not imported yet: %v", got)
	}
	f.apply(opAdd, imported("shop", "web"))
	if got := ask(f.snapshot(), "web.shop"); !reflect.DeepEqual(got, []string{"NOERROR", "10.2.0.10"}) {
		t.Errorf("imported: %v", got)
	}
	f.apply(opDelete, imported("shop", "web"))
	if got := ask(f.snapshot(), "web.shop"); !reflect.DeepEqual(got, []string{"NXDOMAIN"}) {
		t.Errorf("import deleted: %v", got)
	}
	f.apply(opAdd, imported("shop", "web"))
	if got := ask(f.snapshot(), "web.shop"); !reflect.DeepEqual(got, []string{"NOERROR", "10.2.0.10"}) {
		t.Errorf("imported again, the slice is still known: %v", got)
	}
	f.apply(opDelete, readySlice("shop", "web", "c2", "10.2.0.10"))
	if got := ask(f.snapshot(), "web.shop"); !reflect.DeepEqual(got, []string{"NXDOMAIN"}) || len(f.s.orphans) != 0 {
		t.Errorf("slice deleted: %v, %d orphans", got, len(f.s.orphans))
	}
}

func TestSliceMovesToAnotherService(t *testing.T) {
	f := newStoreFixture(t)
	f.apply(opAdd, imported("shop", "web"), imported("shop", "api"))
	sl := readySlice("shop", "web", "c2", "10.2.0.10")
	sl.Name = "shared"
	f.apply(opAdd, sl)
	moved := sl.DeepCopy()
	moved.Labels[mcsv1.LabelServiceName] = "api"
	f.apply(opUpdate, moved)
	snap := f.snapshot()
	if web, api := ask(snap, "web.shop"), ask(snap, "api.shop"); !reflect.DeepEqual(web, []string{"NXDOMAIN"}) ||
		!reflect.DeepEqual(api, []string{"NOERROR", "10.2.0.10"}) {
		t.Errorf("after the move web %v, api %v; want NXDOMAIN and 10.2.0.10", web, api)
	}
	f.apply(opDelete, moved)
	if api := ask(f.snapshot(), "api.shop"); !reflect.DeepEqual(api, []string{"NXDOMAIN"}) {
		t.Errorf("deleted: api %v", api)
	}
}

// TestReplace is a full list after the watch was down: what is not listed goes, and a
// slice listed under another service moves there.
func TestReplace(t *testing.T) {
	f := newStoreFixture(t)
	f.apply(opAdd, imported("shop", "web"), imported("shop", "api"), imported("shop", "old"),
		readySlice("shop", "web", "c2", "10.2.0.10"), readySlice("shop", "old", "c2", "10.2.0.30"))
	moved := readySlice("shop", "api", "c2", "10.2.0.20")
	moved.Name = "web-c2"
	imports := []any{f.s.in.record(imported("shop", "web")), f.s.in.record(imported("shop", "api"))}
	// The reflector hands over records (streamed, Transformer) or typed objects (listed).
	slices := []any{moved}
	for _, err := range []error{f.s.replace(kindImport, imports), kindStore{s: f.s, kind: kindSlice}.Replace(slices, "")} {
		if err != nil {
			t.Fatal(err)
		}
	}
	snap := f.snapshot()
	for name, want := range map[string][]string{"web.shop": {"NXDOMAIN"}, "api.shop": {"NOERROR", "10.2.0.20"}, "old.shop": {"NXDOMAIN"}} {
		if got := ask(snap, name); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if snap.Services() != 2 || len(f.s.orphans) != 0 {
		t.Errorf("%d services, %d orphans; want 2 and 0", snap.Services(), len(f.s.orphans))
	}
}

// TestSnapshotsShareUnchangedServices: a change builds a new map of entries, leaves the
// snapshot served until then as it was, and shares the other services' entries.
func TestSnapshotsShareUnchangedServices(t *testing.T) {
	f := newStoreFixture(t)
	f.apply(opAdd, imported("shop", "web"), imported("shop", "api"),
		readySlice("shop", "web", "c2", "10.2.0.10"), readySlice("shop", "api", "c2", "10.2.0.20"))
	before := f.snapshot()
	f.apply(opUpdate, readySlice("shop", "web", "c2", "10.2.0.11"))
	after := f.snapshot()
	if got := ask(before, "web.shop"); !reflect.DeepEqual(got, []string{"NOERROR", "10.2.0.10"}) {
		t.Errorf("the earlier snapshot changed: %v", got)
	}
	if got := ask(after, "web.shop"); !reflect.DeepEqual(got, []string{"NOERROR", "10.2.0.11"}) {
		t.Errorf("the new snapshot: %v", got)
	}
	api := resolver.ServiceKey{Name: "api", Namespace: "shop"}
	if before.Entry(api) == nil || before.Entry(api) != after.Entry(api) {
		t.Error("the unchanged service's entry is not shared")
	}
}

// TestOnlyChangesThatMatterRebuild: updates that change nothing the answers depend on
// (an import's status, a Peer's latency) are not reported as changes.
func TestOnlyChangesThatMatterRebuild(t *testing.T) {
	f := newStoreFixture(t)
	f.apply(opAdd, imported("shop", "web"), readySlice("shop", "web", "c2", "10.2.0.10"))
	f.changes = 0
	si := imported("shop", "web")
	si.Status.Clusters = []mcsv1.ClusterStatus{{Cluster: "c2"}}
	si.Annotations = map[string]string{"x": "y"}
	p := peer("c2", "Connected", nil)
	p.Namespace, p.Name = straitv1.SystemNamespace, "c2"
	p.Status.LatencyMicros = 420
	f.apply(opUpdate, si, readySlice("shop", "web", "c2", "10.2.0.10"), &p)
	if f.changes != 0 {
		t.Errorf("%d changes reported for updates that change no answer", f.changes)
	}
	p.Status.State = "Error"
	f.apply(opUpdate, &p)
	if f.changes != 1 {
		t.Errorf("%d changes reported for a Peer that disconnected, want 1", f.changes)
	}
	if got := ask(f.snapshot(), "web.shop"); !reflect.DeepEqual(got, []string{"NXDOMAIN"}) {
		t.Errorf("c2 disconnected: %v", got)
	}
}

// TestRotationContinuesAcrossChanges: a change to a service's slices does not restart
// its round robin.
func TestRotationContinuesAcrossChanges(t *testing.T) {
	f := newStoreFixture(t)
	p := peer("c3", "", nil)
	p.Namespace, p.Name = straitv1.SystemNamespace, "c3"
	f.apply(opAdd, &p, imported("shop", "web"), readySlice("shop", "web", "c2", "10.2.0.10"), readySlice("shop", "web", "c3", "10.3.0.10"))
	if got := ask(f.snapshot(), "web.shop"); !reflect.DeepEqual(got, []string{"NOERROR", "10.2.0.10"}) {
		t.Fatalf("first turn: %v", got)
	}
	f.apply(opUpdate, readySlice("shop", "web", "c2", "10.2.0.11"))
	if got := ask(f.snapshot(), "web.shop"); !reflect.DeepEqual(got, []string{"NOERROR", "10.3.0.10"}) {
		t.Errorf("second turn, after c2's slice changed: %v, want c3's", got)
	}
}
