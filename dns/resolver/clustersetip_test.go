package resolver

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/miekg/dns"
)

// withClusterSetIPs is the fixture with clusterset IPs written for web and down.
func withClusterSetIPs(mod func(*Config)) *Snapshot {
	cfg := Config{Zones: []string{"clusterset.local"}, TTL: 5, ClusterNames: true, LocalCluster: "c1"}
	if mod != nil {
		mod(&cfg)
	}
	svcs := fixtureServices()
	svcs[0].IPs = []netip.Addr{netip.MustParseAddr("10.96.0.10")}
	svcs[2].IPs = []netip.Addr{netip.MustParseAddr("10.96.0.12")}
	return NewSnapshot(cfg, svcs, connected, nil)
}

func TestClusterSetIPAnswers(t *testing.T) {
	const z = ".svc.clusterset.local."
	localFirst := func(c *Config) { c.LocalFirst = true }
	tests := []struct {
		name  string
		qname string
		qtype uint16
		mod   func(*Config)
		want  []string
	}{
		{"the service name is its clusterset IP", "web.default" + z, dns.TypeA, nil, []string{"NOERROR", "A 10.96.0.10"}},
		{"no AAAA for an IPv4 clusterset IP", "web.default" + z, dns.TypeAAAA, nil, []string{"NOERROR"}},
		{"LocalFirst answers one cluster's address", "web.default" + z, dns.TypeA, localFirst, []string{"NOERROR", "A 10.1.0.10"}},
		{"no IPs written yet: one cluster's address", "api.default" + z, dns.TypeA, nil, []string{"NOERROR", "A 10.2.0.11"}},
		{"no ready export anywhere: NXDOMAIN despite the IP", "down.default" + z, dns.TypeA, nil, []string{"NXDOMAIN"}},
		{"cluster names keep answering one cluster", "c3.web.default" + z, dns.TypeA, nil, []string{"NOERROR", "A 10.3.0.10"}},
		{"port SRV targets the service, the clusterset IP beside", "_http._tcp.web.default" + z, dns.TypeSRV, nil,
			[]string{"NOERROR", "SRV 0 100 80 web.default.svc.clusterset.local.", "+A 10.96.0.10"}},
		{"bare-name SRV: one per port, named or not, the target's address once", "web.default" + z, dns.TypeSRV, nil,
			[]string{"NOERROR", "SRV 0 100 80 web.default.svc.clusterset.local.", "SRV 0 100 8080 web.default.svc.clusterset.local.", "+A 10.96.0.10"}},
		{"bare-name SRV of a headless service: one per endpoint and port", "db.data" + z, dns.TypeSRV, nil, []string{"NOERROR",
			"SRV 0 50 5432 db-0.c1.db.data.svc.clusterset.local.", "SRV 0 50 15432 db-0.c2.db.data.svc.clusterset.local.",
			"+A 10.1.1.1", "+A 10.2.1.1"}},
		{"bare-name SRV of a service without ports is empty", "pnr.data" + z, dns.TypeSRV, nil, []string{"NOERROR"}},
		{"bare-name SRV with LocalFirst", "web.default" + z, dns.TypeSRV, localFirst,
			[]string{"NOERROR", "SRV 0 100 80 web.default.svc.clusterset.local.", "SRV 0 100 8080 web.default.svc.clusterset.local.", "+A 10.1.0.10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render(withClusterSetIPs(tt.mod).Resolve(tt.qname, tt.qtype))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s %s:\n got %q\nwant %q", tt.qname, dns.TypeToString[tt.qtype], got, tt.want)
			}
		})
	}
}

// TestClusterSetIPAllocations: a clusterset IP answer costs what a per-cluster one does.
func TestClusterSetIPAllocations(t *testing.T) {
	s := withClusterSetIPs(nil)
	if n := testing.AllocsPerRun(1000, func() { s.Resolve("web.default.svc.clusterset.local.", dns.TypeA) }); n != 1 {
		t.Errorf("%.1f allocations per answer, want 1", n)
	}
}

// TestBareSRVOfAPortOverTCPAndUDPIsOneRecord: a port served over TCP and UDP (as the MCS
// conformance suite's hello service, 42 over both) is one SRV record per target for
// the bare name, as CoreDNS answers it; its _<port>._<proto> names keep their own.
func TestBareSRVOfAPortOverTCPAndUDPIsOneRecord(t *testing.T) {
	both := []Port{{Name: "tcp", Protocol: "TCP", Port: 42}, {Name: "udp", Protocol: "UDP", Port: 42}}
	ep := func(ip, host string) Endpoint {
		return Endpoint{Addr: netip.MustParseAddr(ip), Ready: true, Hostname: host}
	}
	svcs := []Service{
		{Namespace: "ns", Name: "hello", Ports: both, IPs: []netip.Addr{netip.MustParseAddr("10.96.0.42")},
			Sources: []ClusterSource{{Cluster: "c1", Endpoints: []Endpoint{ep("10.1.0.42", "")}}}},
		{Namespace: "ns", Name: "hello-ss", Headless: true, Ports: both,
			Sources: []ClusterSource{{Cluster: "c1", Endpoints: []Endpoint{ep("10.1.1.1", "a"), ep("10.1.1.2", "b")}}}},
	}
	s := NewSnapshot(Config{Zones: []string{"clusterset.local"}, TTL: 5, ClusterNames: true, LocalCluster: "c1"}, svcs, connected, nil)
	for _, tt := range []struct {
		qname string
		want  []string
	}{
		{"hello.ns.svc.clusterset.local.", []string{"NOERROR", "SRV 0 100 42 hello.ns.svc.clusterset.local.", "+A 10.96.0.42"}},
		{"hello-ss.ns.svc.clusterset.local.", []string{"NOERROR", "SRV 0 50 42 a.c1.hello-ss.ns.svc.clusterset.local.",
			"SRV 0 50 42 b.c1.hello-ss.ns.svc.clusterset.local.", "+A 10.1.1.1", "+A 10.1.1.2"}},
		{"_udp._udp.hello.ns.svc.clusterset.local.", []string{"NOERROR", "SRV 0 100 42 hello.ns.svc.clusterset.local.", "+A 10.96.0.42"}},
	} {
		if got := render(s.Resolve(tt.qname, dns.TypeSRV)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s SRV:\n got %q\nwant %q", tt.qname, got, tt.want)
		}
	}
}
