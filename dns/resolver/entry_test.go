package resolver

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/miekg/dns"
)

// asSources are an entry's sources as the resolver's model.
func asSources(srcs []source) []ClusterSource {
	out := make([]ClusterSource, len(srcs))
	for i, s := range srcs {
		out[i] = ClusterSource{Cluster: s.cluster, Key: s.key, Ports: s.ports, Endpoints: s.eps, PublishNotReady: s.pnr}
	}
	return out
}

func TestEntryUsesNormalizedSourcesAsTheyAre(t *testing.T) {
	svc := fixtureServices()[0] // web: c1..c4, one source each, in order
	e := NewEntry(svc, nil)
	if e.merged != nil || &e.clusters()[0].eps[0] != &svc.Sources[0].Endpoints[0] {
		t.Error("sources with distinct, ordered, lower-case clusters were merged or their endpoints copied")
	}
	svc.Sources[0], svc.Sources[1] = svc.Sources[1], svc.Sources[0]
	if e := NewEntry(svc, nil); e.merged == nil || e.clusters()[0].cluster != "c1" {
		t.Errorf("unordered sources: got %q first, want a sorted copy starting with c1", e.clusters()[0].cluster)
	}
}

// TestPoolSharesWhatSourcesHaveInCommon: entries made by one Pool hold one copy of what
// their sources have in common, so that an entry costs little more than its endpoints.
func TestPoolSharesWhatSourcesHaveInCommon(t *testing.T) {
	p := NewPool()
	ports := []Port{{Name: "http", Protocol: "TCP", Port: 80}}
	mk := func(name, ip string) *Entry {
		return p.NewEntry(Service{Namespace: "ns", Name: name, Sources: []ClusterSource{{Cluster: "c2", Key: "-c2", Ports: ports,
			Endpoints: []Endpoint{{Addr: netip.MustParseAddr(ip), Ready: true}}}}}, nil)
	}
	a, b := mk("a", "10.2.0.1"), mk("b", "10.2.0.2")
	if a.sources[0].sourceMeta != b.sources[0].sourceMeta {
		t.Error("two services' sources of one cluster, key and ports do not share them")
	}
	if got := b.Service(); got.Sources[0].Endpoints[0].Addr != netip.MustParseAddr("10.2.0.2") || got.Sources[0].Cluster != "c2" {
		t.Errorf("b gives back %+v", got)
	}
}

func TestEntryMergesSourcesOfOneCluster(t *testing.T) {
	ep := func(ip string, ready bool) Endpoint { return Endpoint{Addr: netip.MustParseAddr(ip), Ready: ready} }
	svc := Service{Namespace: "data", Name: "db", Headless: true, Sources: []ClusterSource{
		{Cluster: "C2", Key: "db-b", Ports: []Port{{Name: "pg", Protocol: "TCP", Port: 2}}, Endpoints: []Endpoint{ep("10.2.0.9", true)}},
		{Cluster: "c1", Key: "db-a", Endpoints: []Endpoint{ep("10.1.0.1", true)}},
		{Cluster: "c2", Key: "db-c", PublishNotReady: true, Endpoints: []Endpoint{ep("10.2.0.5", false), ep("10.2.0.1", true)}},
	}}
	e := NewEntry(svc, nil)
	want := []ClusterSource{
		{Cluster: "c1", Key: "db-a", Endpoints: []Endpoint{ep("10.1.0.1", true)}},
		{Cluster: "c2", Ports: []Port{{Name: "pg", Protocol: "TCP", Port: 2}}, PublishNotReady: true,
			Endpoints: []Endpoint{ep("10.2.0.1", true), ep("10.2.0.5", false), ep("10.2.0.9", true)}},
	}
	if got := asSources(e.clusters()); !reflect.DeepEqual(got, want) {
		t.Errorf("merged:\n got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(e.Service(), svc) || e.Key() != (ServiceKey{"db", "data"}) {
		t.Errorf("the entry does not give back the service it was made from: %+v %+v", e.Service(), e.Key())
	}
}

// TestSnapshotsShareEntries assembles two snapshots from the same entries with different
// connected clusters: the entries are neither copied nor changed, and each snapshot
// answers by its own connectivity.
func TestSnapshotsShareEntries(t *testing.T) {
	cfg := Config{TTL: 5, ClusterNames: true, LocalCluster: "c1"}
	entries := map[ServiceKey]*Entry{}
	for _, svc := range fixtureServices() {
		entries[KeyOf(&svc)] = NewEntry(svc, nil)
	}
	all := Assemble(cfg, entries, connected)
	onlyC3 := Assemble(cfg, entries, func(c string) bool { return c == "c3" })
	k := ServiceKey{"api", "default"}
	if all.Entry(k) != entries[k] || onlyC3.Entry(k) != entries[k] {
		t.Fatal("a snapshot does not hold the entry it was given")
	}
	ask := func(s *Snapshot, name string) []string {
		return render(s.Resolve(name+".svc.clusterset.local.", dns.TypeA))
	}
	if got := ask(onlyC3, "c2.api.default"); !reflect.DeepEqual(got, []string{"NXDOMAIN"}) {
		t.Errorf("c2 not connected: %q", got)
	}
	if got := ask(all, "c2.api.default"); !reflect.DeepEqual(got, []string{"NOERROR", "A 10.2.0.11"}) {
		t.Errorf("c2 connected: %q", got)
	}
	for range 3 {
		if got := ask(onlyC3, "api.default"); !reflect.DeepEqual(got, []string{"NOERROR", "A 10.3.0.11"}) {
			t.Fatalf("only c3 connected: %q", got)
		}
	}
	// web 3, api 2, v6 1, db 2, pnr 2 with c2 and c3; without c2: web 2, api 1, db 1.
	if all.Records() != 10 || onlyC3.Records() != 4 {
		t.Errorf("records %d and %d, want 10 and 4", all.Records(), onlyC3.Records())
	}
}
