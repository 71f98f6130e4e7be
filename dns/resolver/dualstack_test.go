package resolver

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/miekg/dns"
)

// A dual-stack member's exports come as one EndpointSlice per family and source
// cluster (the hub's "<svc>-<cluster>" and "<svc>-<cluster>.ipv6"): the resolver merges
// them per cluster and answers A from the one, AAAA from the other, both for ANY and in
// SRV's additional records. c1 is local, c2 connected.
func TestResolveDualStack(t *testing.T) {
	ep := func(ip string, host string) Endpoint {
		return Endpoint{Addr: netip.MustParseAddr(ip), Ready: true, Hostname: host}
	}
	src := func(cluster, key string, eps ...Endpoint) ClusterSource {
		return ClusterSource{Cluster: cluster, Key: key, Endpoints: eps}
	}
	http := []Port{{Name: "http", Protocol: "TCP", Port: 80}}
	services := []Service{
		{Namespace: "app", Name: "web", Ports: http, Sources: []ClusterSource{
			src("c2", "web-c2", ep("10.2.0.10", "")), src("c2", "web-c2.ipv6", ep("fd10:2::10", "")),
			src("c1", "web-c1.ipv6", ep("fd10:1::10", "")), src("c1", "web-c1", ep("10.1.0.10", ""))}},
		{Namespace: "app", Name: "db", Headless: true, Ports: http, Sources: []ClusterSource{
			src("c2", "db-c2", ep("10.2.1.1", "db-0")), src("c2", "db-c2.ipv6", ep("fd10:2:0:1::1", "db-0"), ep("fd10:2:0:1::2", ""))}},
		{Namespace: "app", Name: "v4", Ports: http, Sources: []ClusterSource{src("c2", "v4-c2", ep("10.2.0.11", ""))}},
	}
	s := NewSnapshot(Config{Zones: []string{"clusterset.local"}, TTL: 5, ClusterNames: true, LocalCluster: "c1", Serial: 1},
		services, func(c string) bool { return c == "c2" }, nil)
	const z = ".svc.clusterset.local."
	for _, tc := range []struct {
		name, qname string
		qtype       uint16
		want        []string
	}{
		{"A: the local cluster's IPv4", "web.app" + z, dns.TypeA, []string{"NOERROR", "A 10.1.0.10"}},
		{"AAAA: the local cluster's IPv6", "web.app" + z, dns.TypeAAAA, []string{"NOERROR", "AAAA fd10:1::10"}},
		{"AAAA of a cluster", "c2.web.app" + z, dns.TypeAAAA, []string{"NOERROR", "AAAA fd10:2::10"}},
		{"headless AAAA: every IPv6 endpoint", "db.app" + z, dns.TypeAAAA, []string{"NOERROR", "AAAA fd10:2:0:1::1", "AAAA fd10:2:0:1::2"}},
		{"headless A: the IPv4 endpoint alone", "db.app" + z, dns.TypeA, []string{"NOERROR", "A 10.2.1.1"}},
		{"a hostname of both families answers both", "db-0.c2.db.app" + z, dns.TypeAAAA, []string{"NOERROR", "AAAA fd10:2:0:1::1"}},
		{"an IPv6 endpoint without hostname has a dashed name", "fd10-2-0-1--2.c2.db.app" + z, dns.TypeAAAA, []string{"NOERROR", "AAAA fd10:2:0:1::2"}},
		{"SRV of a headless service names targets of both families", "_http._tcp.db.app" + z, dns.TypeSRV, []string{"NOERROR",
			"SRV 0 50 80 db-0.c2.db.app.svc.clusterset.local.", "SRV 0 50 80 fd10-2-0-1--2.c2.db.app.svc.clusterset.local.",
			"+A 10.2.1.1", "+AAAA fd10:2:0:1::1", "+AAAA fd10:2:0:1::2"}},
		{"SRV of a ClusterSetIP service: one record, both families' addresses", "_http._tcp.c2.web.app" + z, dns.TypeSRV, []string{"NOERROR",
			"SRV 0 100 80 c2.web.app.svc.clusterset.local.", "+A 10.2.0.10", "+AAAA fd10:2::10"}},
		{"AAAA of an IPv4-only service: NOERROR, empty", "v4.app" + z, dns.TypeAAAA, []string{"NOERROR"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(s.Resolve(tc.qname, tc.qtype)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%s %s:\n got %q\nwant %q", tc.qname, dns.TypeToString[tc.qtype], got, tc.want)
			}
		})
	}
}
