package resolver

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/straitnet/strait/test/benchcpu"
)

// Clusters: c1 is local, c2 and c3 are connected, c4 is not.
func fixtureServices() []Service {
	ep := func(ip string, ready bool, host string) Endpoint {
		return Endpoint{Addr: netip.MustParseAddr(ip), Ready: ready, Hostname: host}
	}
	one := func(cluster, ip string, ready bool) ClusterSource {
		return ClusterSource{Cluster: cluster, Endpoints: []Endpoint{ep(ip, ready, "")}}
	}
	http := []Port{{Name: "http", Protocol: "TCP", Port: 80}, {Protocol: "TCP", Port: 8080}}
	return []Service{
		{Namespace: "default", Name: "web", Ports: http, Sources: []ClusterSource{
			one("c1", "10.1.0.10", true), one("c2", "10.2.0.10", true), one("c3", "10.3.0.10", true), one("c4", "10.4.0.10", true)}},
		{Namespace: "default", Name: "api", Ports: http, Sources: []ClusterSource{
			one("c3", "10.3.0.11", true), one("c1", "10.1.0.11", false), one("c2", "10.2.0.11", true), one("c4", "10.4.0.11", true)}},
		{Namespace: "default", Name: "down", Ports: http, Sources: []ClusterSource{
			one("c1", "10.1.0.12", false), one("c2", "10.2.0.12", false), one("c4", "10.4.0.12", true)}},
		{Namespace: "default", Name: "v6", Ports: http, Sources: []ClusterSource{one("c2", "fd00::10", true)}},
		{Namespace: "data", Name: "db", Headless: true, Ports: []Port{{Name: "pg", Protocol: "TCP", Port: 5432}}, Sources: []ClusterSource{
			{Cluster: "c1", Endpoints: []Endpoint{ep("10.1.1.1", true, "db-0"), ep("10.1.1.2", false, "db-1")}},
			{Cluster: "c2", Ports: []Port{{Name: "pg", Protocol: "TCP", Port: 15432}}, Endpoints: []Endpoint{ep("10.2.1.1", true, "db-0")}},
			{Cluster: "c4", Endpoints: []Endpoint{ep("10.4.1.1", true, "db-0")}},
		}},
		{Namespace: "data", Name: "pnr", Headless: true, Sources: []ClusterSource{
			{Cluster: "c2", PublishNotReady: true, Endpoints: []Endpoint{ep("10.2.2.1", false, ""), ep("10.2.2.2", true, "b")}},
		}},
	}
}

func connected(c string) bool { return c == "c2" || c == "c3" }

func fixture(mod func(*Config)) *Snapshot {
	cfg := Config{Zones: []string{"clusterset.local", "example.org."}, TTL: 5, ClusterNames: true, LocalCluster: "c1", Serial: 7}
	if mod != nil {
		mod(&cfg)
	}
	return NewSnapshot(cfg, fixtureServices(), connected, nil)
}

// render turns an answer into short lines a person reads: "NXDOMAIN", "A 10.1.0.10".
func render(a Answer) []string {
	out := []string{dns.RcodeToString[a.Rcode]}
	for _, rr := range a.Answer {
		out = append(out, short(rr))
	}
	for _, rr := range a.Extra {
		out = append(out, "+"+short(rr))
	}
	return out
}

func short(rr dns.RR) string {
	switch r := rr.(type) {
	case *dns.A:
		return "A " + r.A.String()
	case *dns.AAAA:
		return "AAAA " + r.AAAA.String()
	case *dns.SRV:
		return fmt.Sprintf("SRV %d %d %d %s", r.Priority, r.Weight, r.Port, r.Target)
	case *dns.TXT:
		return "TXT " + strings.Join(r.Txt, " ")
	case *dns.SOA:
		return "SOA " + r.Hdr.Name
	}
	return rr.String()
}

func TestResolve(t *testing.T) {
	const z = ".svc.clusterset.local."
	tests := []struct {
		name  string
		qname string
		qtype uint16
		mod   func(*Config)
		want  []string
	}{
		{"local preferred when ready", "web.default" + z, dns.TypeA, nil, []string{"NOERROR", "A 10.1.0.10"}},
		{"case of the question is kept, lookup is case-insensitive", "WEB.Default.SVC.ClusterSet.Local.", dns.TypeA, nil, []string{"NOERROR", "A 10.1.0.10"}},
		{"no ready export anywhere connected", "down.default" + z, dns.TypeA, nil, []string{"NXDOMAIN"}},
		{"unknown service", "nope.default" + z, dns.TypeA, nil, []string{"NXDOMAIN"}},
		{"unknown namespace", "web.other" + z, dns.TypeA, nil, []string{"NXDOMAIN"}},
		{"AAAA of an IPv4-only service is empty", "web.default" + z, dns.TypeAAAA, nil, []string{"NOERROR"}},
		{"AAAA", "v6.default" + z, dns.TypeAAAA, nil, []string{"NOERROR", "AAAA fd00::10"}},
		{"MX of a service is empty", "web.default" + z, dns.TypeMX, nil, []string{"NOERROR"}},
		{"cluster name", "c3.web.default" + z, dns.TypeA, nil, []string{"NOERROR", "A 10.3.0.10"}},
		{"cluster name of the local cluster", "c1.web.default" + z, dns.TypeA, nil, []string{"NOERROR", "A 10.1.0.10"}},
		{"cluster name of a disconnected cluster", "c4.web.default" + z, dns.TypeA, nil, []string{"NXDOMAIN"}},
		{"cluster name of a not-ready export", "c1.api.default" + z, dns.TypeA, nil, []string{"NXDOMAIN"}},
		{"cluster names off", "c3.web.default" + z, dns.TypeA, func(c *Config) { c.ClusterNames = false }, []string{"NXDOMAIN"}},
		{"headless: every ready endpoint of connected clusters, local first", "db.data" + z, dns.TypeA, nil, []string{"NOERROR", "A 10.1.1.1", "A 10.2.1.1"}},
		{"headless per-endpoint name", "db-0.c2.db.data" + z, dns.TypeA, nil, []string{"NOERROR", "A 10.2.1.1"}},
		{"headless not-ready endpoint left out", "db-1.c1.db.data" + z, dns.TypeA, nil, []string{"NXDOMAIN"}},
		{"headless endpoint of a disconnected cluster", "db-0.c4.db.data" + z, dns.TypeA, nil, []string{"NXDOMAIN"}},
		{"headless per-endpoint name with cluster names off", "db-0.c1.db.data" + z, dns.TypeA, func(c *Config) { c.ClusterNames = false }, []string{"NOERROR", "A 10.1.1.1"}},
		{"headless cluster name", "c2.db.data" + z, dns.TypeA, nil, []string{"NOERROR", "A 10.2.1.1"}},
		{"publishNotReadyAddresses", "pnr.data" + z, dns.TypeA, nil, []string{"NOERROR", "A 10.2.2.1", "A 10.2.2.2"}},
		{"endpoint without hostname has a dashed name", "10-2-2-1.c2.pnr.data" + z, dns.TypeA, nil, []string{"NOERROR", "A 10.2.2.1"}},
		{"SRV of a ClusterSetIP service", "_http._tcp.web.default" + z, dns.TypeSRV, nil,
			[]string{"NOERROR", "SRV 0 100 80 web.default.svc.clusterset.local.", "+A 10.1.0.10"}},
		{"SRV of a cluster", "_http._tcp.c2.web.default" + z, dns.TypeSRV, nil,
			[]string{"NOERROR", "SRV 0 100 80 c2.web.default.svc.clusterset.local.", "+A 10.2.0.10"}},
		{"SRV protocol must match", "_http._udp.web.default" + z, dns.TypeSRV, nil, []string{"NXDOMAIN"}},
		{"SRV of an unknown port", "_grpc._tcp.web.default" + z, dns.TypeSRV, nil, []string{"NXDOMAIN"}},
		{"SRV of a headless service: one per endpoint, target ports per cluster", "_pg._tcp.db.data" + z, dns.TypeSRV, nil, []string{"NOERROR",
			"SRV 0 50 5432 db-0.c1.db.data.svc.clusterset.local.", "SRV 0 50 15432 db-0.c2.db.data.svc.clusterset.local.",
			"+A 10.1.1.1", "+A 10.2.1.1"}},
		{"A of an SRV name is empty", "_http._tcp.web.default" + z, dns.TypeA, nil, []string{"NOERROR"}},
		{"dns-version", "dns-version.clusterset.local.", dns.TypeTXT, nil, []string{"NOERROR", "TXT 1.0.0"}},
		{"extra zone", "web.default.svc.example.org.", dns.TypeA, nil, []string{"NOERROR", "A 10.1.0.10"}},
		{"SRV targets stay in the asked zone", "_http._tcp.web.default.svc.example.org.", dns.TypeSRV, nil,
			[]string{"NOERROR", "SRV 0 100 80 web.default.svc.example.org.", "+A 10.1.0.10"}},
		{"outside the zones", "web.default.svc.cluster.local.", dns.TypeA, nil, []string{"REFUSED"}},
		{"a zone's suffix is not the zone", "xclusterset.local.", dns.TypeA, nil, []string{"REFUSED"}},
		{"apex SOA", "clusterset.local.", dns.TypeSOA, nil, []string{"NOERROR", "SOA clusterset.local."}},
		{"too deep", "a.b.c.d.e.f.g.svc.clusterset.local.", dns.TypeA, nil, []string{"NXDOMAIN"}},
		{"not under svc", "web.default.pod.clusterset.local.", dns.TypeA, nil, []string{"NXDOMAIN"}},
		{"unqualified question", "web.default.svc.clusterset.local", dns.TypeA, nil, []string{"NOERROR", "A 10.1.0.10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render(fixture(tt.mod).Resolve(tt.qname, tt.qtype))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s %s:\n got %q\nwant %q", tt.qname, dns.TypeToString[tt.qtype], got, tt.want)
			}
		})
	}
}

func TestNegativeAnswersCarrySOAAndTTL(t *testing.T) {
	s := fixture(func(c *Config) { c.TTL = 30 })
	for _, q := range []string{"nope.default.svc.clusterset.local.", "web.default.svc.clusterset.local."} {
		a := s.Resolve(q, dns.TypeMX)
		if len(a.Ns) != 1 {
			t.Fatalf("%s MX: authority %v, want the zone's SOA", q, a.Ns)
		}
		soa := a.Ns[0].(*dns.SOA)
		if soa.Minttl != 30 || soa.Hdr.Ttl != 30 || soa.Serial != 7 || soa.Hdr.Name != "clusterset.local." {
			t.Errorf("SOA %v: want minimum and TTL 30, serial 7, owner clusterset.local.", soa)
		}
	}
	a := s.Resolve("web.default.svc.clusterset.local.", dns.TypeA)
	if ttl := a.Answer[0].Header().Ttl; ttl != 30 {
		t.Errorf("TTL %d, want 30", ttl)
	}
}

func TestRoundRobinOverConnectedClusters(t *testing.T) {
	s := fixture(nil)
	var got []string
	for range 5 {
		got = append(got, render(s.Resolve("api.default.svc.clusterset.local.", dns.TypeA))[1:]...)
	}
	// c1 (local) is not ready, c4 is disconnected: c2 and c3 take turns.
	want := []string{"A 10.2.0.11", "A 10.3.0.11", "A 10.2.0.11", "A 10.3.0.11", "A 10.2.0.11"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	// A new snapshot continues the rotation where the old one stopped.
	next := NewSnapshot(s.Config(), fixtureServices(), connected, s)
	if got := render(next.Resolve("api.default.svc.clusterset.local.", dns.TypeA)); got[1] != "A 10.3.0.11" {
		t.Errorf("after a swap got %q, want the rotation to continue with 10.3.0.11", got)
	}
	// c3 disconnects: only c2 is left.
	onlyC2 := NewSnapshot(s.Config(), fixtureServices(), func(c string) bool { return c == "c2" }, next)
	for range 3 {
		if got := render(onlyC2.Resolve("api.default.svc.clusterset.local.", dns.TypeA)); got[1] != "A 10.2.0.11" {
			t.Fatalf("with c3 disconnected got %q, want 10.2.0.11 only", got)
		}
	}
	// The local cluster's export gets ready: it wins over the rotation.
	svcs := fixtureServices()
	svcs[1].Sources[1].Endpoints[0].Ready = true
	local := NewSnapshot(s.Config(), svcs, connected, next)
	if got := render(local.Resolve("api.default.svc.clusterset.local.", dns.TypeA)); got[1] != "A 10.1.0.11" {
		t.Errorf("with the local export ready got %q, want 10.1.0.11", got)
	}
}

func TestSnapshotSize(t *testing.T) {
	s := fixture(nil)
	if s.Services() != 6 {
		t.Errorf("Services() = %d, want 6", s.Services())
	}
	// web 3, api 2, down 0, v6 1, db 2, pnr 2 answerable addresses.
	if s.Records() != 10 {
		t.Errorf("Records() = %d, want 10", s.Records())
	}
}

func BenchmarkResolve(b *testing.B) {
	s := fixture(nil)
	b.ReportAllocs()
	cpu := benchcpu.Start(b)
	for b.Loop() {
		s.Resolve("api.default.svc.clusterset.local.", dns.TypeA)
	}
	cpu.Report()
}

// TestResolveAllocations: a ClusterSetIP answer is one allocation, the record with its
// address and the answer's slice.
func TestResolveAllocations(t *testing.T) {
	s := fixture(nil)
	if n := testing.AllocsPerRun(1000, func() { s.Resolve("api.default.svc.clusterset.local.", dns.TypeA) }); n != 1 {
		t.Errorf("%.1f allocations per answer, want 1", n)
	}
}
