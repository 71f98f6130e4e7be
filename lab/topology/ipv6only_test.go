package topology

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func ipv6OnlySpec() Spec {
	return Spec{Hub: true, Gateways: 1, Workers: 1, SampleWorkloads: true, IPFamilies: []string{IPv6}}
}

// TestIPv6OnlyClustersHaveNoIPv4: an IPv6-only lab gives its clusters the ClusterSet's
// IPv6 ranges and nothing of IPv4 that Kubernetes or Strait sees (no IPv4 pod or service
// CIDR, no IPv4 route to one, Nodes' addresses and the gateways' addresses IPv6), routes
// IPv6 host-gw between nodes and through the routers, and the host routes the ClusterSet's
// IPv6 ranges and the lab's /48 into the lab.
func TestIPv6OnlyClustersHaveNoIPv4(t *testing.T) {
	l, errs := Compute(loadExample(t, "ipv6only"), ipv6OnlySpec())
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	c1, _ := l.Cluster("c1")
	c2, _ := l.Cluster("c2")
	gw, node := c2.Nodes[0], c2.Nodes[1]
	for what, got := range map[string]any{
		"c1 pods":         c1.PodCIDRs(),
		"c2 pods":         c2.PodCIDRs(),
		"c2 services":     c2.ServiceCIDRs(),
		"c2 kube-dns":     fmt.Sprint(c2.APIServiceIP, " ", c2.DNSServiceIP),
		"c2 v6only":       fmt.Sprint(c2.IPv6Only(), gw.IPv6Only(), node.IPv6Only()),
		"c2-gw-1":         fmt.Sprint(gw.InternalIPs(), " ", gw.GatewayIP(), " ", gw.PodCIDR6, " ", gw.PodCIDR.IsValid()),
		"c2-node-1":       fmt.Sprint(node.InternalIPs(), " ", node.GatewayIP().IsValid(), " ", node.PodCIDR6),
		"c2-node-1 route": routeList(node.Routes),
		"c2 cp routes":    routeList(c2.ControlPlane.Routes),
		"host routes":     fmt.Sprint(l.HostLink.Routes),
	} {
		want := map[string]string{
			"c1 pods":         "[fd10:8::/56]",
			"c2 pods":         "[fd10:9::/56]",
			"c2 services":     "[fd10:99::/112]",
			"c2 kube-dns":     "fd10:99::1 fd10:99::a",
			"c2 v6only":       "true true true",
			"c2-gw-1":         "[fd10:1ab:0:2::b] fd10:1ab:0:200::d fd10:9:0:1::/64 false",
			"c2-node-1":       "[fd10:1ab:0:2::c] false fd10:9:0:2::/64",
			"c2-node-1 route": "fd10:9:0:1::/64 via fd10:1ab:0:2::b, fd10:99::/112 via fd10:1ab:0:2::2, 0.0.0.0/0 via 10.250.2.1, ::/0 via fd10:1ab:0:2::1",
			"c2 cp routes":    "fd10:9:0:1::/64 via fd10:1ab:0:2::b, fd10:9:0:2::/64 via fd10:1ab:0:2::c, fd10:99::/112 via fd10:1ab:0:2::b, 10.250.254.0/24 via 10.250.2.3, 0.0.0.0/0 via 10.250.2.1, ::/0 via fd10:1ab:0:2::1",
			"host routes":     "[10.250.0.0/16 198.18.0.0/24 198.18.1.0/24 fd10:8::/56 fd10:9::/56 fd10:88::/112 fd10:99::/112 fd10:1ab::/48]",
		}[what]
		if fmt.Sprint(got) != want {
			t.Errorf("%s = %v, want %s", what, got, want)
		}
	}
	// The internet routes each member's IPv6 ranges back through its router, and no IPv4
	// range of theirs (they have none).
	var back []string
	for _, r := range l.Internet.Routes {
		if r.Dst.Addr().Is6() {
			back = append(back, r.Dst.String()+" via "+r.Via.String())
		}
	}
	if got, want := strings.Join(back, ", "), "fd10:1ab:0:1::/64 via fd10:1ab:0:200::a, fd10:8::/56 via fd10:1ab:0:200::a, fd10:88::/112 via fd10:1ab:0:200::a, "+
		"fd10:1ab:0:2::/64 via fd10:1ab:0:200::c, fd10:9::/56 via fd10:1ab:0:200::c, fd10:99::/112 via fd10:1ab:0:200::c"; got != want {
		t.Errorf("the internet's IPv6 routes: %s, want %s", got, want)
	}
}

// TestIPv6OnlyLabRefusals: what an IPv6-only lab cannot build is refused naming the field.
func TestIPv6OnlyLabRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		spec func(*Spec)
		cs   string
		want string
	}{
		"IPv4 CIDRs":  {cs: "basic", want: `spec.clusters[1].serviceCIDRs[0]: Invalid value: "10.99.0.0/16": an IPv6-only lab's clusters have no IPv4`},
		"no IPv6":     {cs: "basic", want: `spec.clusters[0].podCIDRs: Required value: an IPv6-only lab needs the cluster's IPv6 podCIDRs`},
		"globalnet":   {cs: "globalnet", want: `spec.globalnet.enabled: Invalid value: true: an IPv6-only lab's clusters have no IPv4 for globalnet`},
		"flannel":     {spec: func(s *Spec) { s.Clusters = map[string]ClusterShape{"c1": {CNI: CNIFlannel}} }, want: `lab.clusters[c1].cni: Invalid value: "flannel": an IPv6-only lab's clusters run the bridge CNI`},
		"kindnet":     {spec: func(s *Spec) { s.Clusters = map[string]ClusterShape{"c1": {CNI: CNIKindnetMasq}} }, want: `lab.clusters[c1].cni: Invalid value: "kindnet-masq"`},
		"gateway NAT": {spec: func(s *Spec) { s.Clusters = map[string]ClusterShape{"c2": {GatewayNAT: GatewayNATMasquerade}} }, want: `lab.clusters[c2].gatewayNAT: Invalid value: "masquerade": an IPv6-only lab puts no gateways behind NAT`},
		"iptables":    {spec: func(s *Spec) { s.Clusters = map[string]ClusterShape{"c2": {KubeProxyMode: KubeProxyIPTables}} }, want: `lab.clusters[c2].kubeProxyMode: Invalid value: "iptables": an IPv6-only lab's kube-proxy runs nftables`},
		"unjoined":    {spec: func(s *Spec) { s.Unjoined = []string{"c2"} }, want: `lab.unjoined: Invalid value: ["c2"]: an IPv6-only lab joins every cluster`},
		"monitoring":  {spec: func(s *Spec) { s.Monitoring = true }, want: `lab.monitoring: Invalid value: true: an IPv6-only lab runs no Prometheus`},
	} {
		t.Run(name, func(t *testing.T) {
			spec := ipv6OnlySpec()
			if tc.spec != nil {
				tc.spec(&spec)
			}
			cs := tc.cs
			if cs == "" {
				cs = "ipv6only"
			}
			_, errs := Compute(loadExample(t, cs), spec)
			if got := errs.ToAggregate(); got == nil || !strings.Contains(got.Error(), tc.want) {
				t.Errorf("errors %v, want one containing %q", got, tc.want)
			}
		})
	}
}

// TestIPv6OnlyNetworksClearOfTheClusterSet: the lab's own IPv6 range is chosen clear of
// the host (fd00::/64 here) and of the ClusterSet's IPv6 ranges.
func TestIPv6OnlyNetworksClearOfTheClusterSet(t *testing.T) {
	host := []HostRange{{Prefix: netip.MustParsePrefix("fd00::/64"), What: "route fd00::/64 dev eth0"}}
	cs := loadExample(t, "ipv6only")
	cs.Spec.Clusters[0].PodCIDRs = []string{"fd10:1ab:0:8000::/56"}
	got, errs := ChooseNetworks(cs, Networks{}, host, true)
	if len(errs) > 0 || got.IPv6 != "fd11:1ab::/48" {
		t.Errorf("IPv6 range %q (%v), want fd11:1ab::/48", got.IPv6, errs.ToAggregate())
	}
}
