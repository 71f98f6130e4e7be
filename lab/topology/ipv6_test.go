package topology

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func routeList(rs []Route) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.Dst.String()+" via "+r.Via.String())
	}
	return strings.Join(s, ", ")
}

// TestDualStackTwinsEveryAddress: a dual-stack lab gives every LAN and WAN address an
// IPv6 twin at the same offset, every node a /64 of its cluster's /56, and routes IPv6
// as it routes IPv4, host-gw between nodes included; the host routes the whole /48.
func TestDualStackTwinsEveryAddress(t *testing.T) {
	spec := DefaultSpec("")
	spec.IPFamilies = []string{IPv4, IPv6}
	l, errs := Compute(loadExample(t, "basic"), spec)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	c2, _ := l.Cluster("c2")
	for what, got := range map[string]any{
		"c2 pods":      c2.PodCIDRs(),
		"c2 services6": c2.ServiceCIDRs(),
		"c2 services":  c2.ServiceCIDR6,
		"c2 LAN":       c2.LANSubnet6,
		"c2 cp":        c2.ControlPlane.LANAddr6,
		"c2 router":    fmt.Sprint(c2.Router.LANAddr6, " ", c2.Router.WANAddr6),
		"internet":     fmt.Sprint(l.Internet.Addr6, " ", l.Internet.WANAddr6),
		"host link":    fmt.Sprint(l.HostLink.Addr6, " ", l.HostLink.PeerAddr6),
		"host routes":  fmt.Sprint(l.HostLink.Routes),
		"c2-gw-2":      fmt.Sprint(c2.Nodes[1].LANAddr6, " ", c2.Nodes[1].WANAddr6, " ", c2.Nodes[1].PodCIDR6),
		"c2-node-1 v6": routeList(c2.Nodes[2].Routes),
	} {
		want := map[string]string{
			"c2 pods":      "[10.9.0.0/16 fd10:1ab:0:8100::/56]",
			"c2 services6": "[10.99.0.0/16 fd10:1ab:0:101::/112]",
			"c2 services":  "fd10:1ab:0:101::/112",
			"c2 LAN":       "fd10:1ab:0:2::/64",
			"c2 cp":        "fd10:1ab:0:2::2/64",
			"c2 router":    "fd10:1ab:0:2::1/64 fd10:1ab:0:200::d/64",
			"internet":     "fd10:1ab:0:201::1 fd10:1ab:0:200::1/64",
			"host link":    "fd10:1ab:0:201::fd/126 fd10:1ab:0:201::fe/126",
			"host routes":  "[10.8.0.0/16 10.9.0.0/16 10.88.0.0/16 10.99.0.0/16 10.250.0.0/16 198.18.0.0/24 198.18.1.0/24 fd10:1ab::/48]",
			"c2-gw-2":      "fd10:1ab:0:2::c/64 fd10:1ab:0:200::f/64 fd10:1ab:0:8102::/64",
			"c2-node-1 v6": "10.9.1.0/24 via 10.250.2.11, fd10:1ab:0:8101::/64 via fd10:1ab:0:2::b, 10.9.2.0/24 via 10.250.2.12, fd10:1ab:0:8102::/64 via fd10:1ab:0:2::c, 10.99.0.0/16 via 10.250.2.2, fd10:1ab:0:101::/112 via fd10:1ab:0:2::2, 0.0.0.0/0 via 10.250.2.1, ::/0 via fd10:1ab:0:2::1",
		}[what]
		if fmt.Sprint(got) != want {
			t.Errorf("%s = %v, want %s", what, got, want)
		}
	}
	for _, k := range c2.Links {
		// The hub stays IPv4: its legs on the members' LANs have no IPv6 address.
		if k.Addr.IsValid() && !k.Addr6.IsValid() && k.Namespace != l.Hub.Namespace {
			t.Errorf("link %s/%s has %s and no IPv6 twin", k.Namespace, k.Name, k.Addr)
		}
	}
}

// TestIPv4LabHasNoIPv6: the default lab is what it was, no IPv6 anywhere.
func TestIPv4LabHasNoIPv6(t *testing.T) {
	l, errs := Compute(loadExample(t, "basic"), DefaultSpec(""))
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	if l.IPv6Range.IsValid() || l.Networks.IPv6 != "" || l.HostLink.Addr6.IsValid() {
		t.Errorf("an IPv4 lab got IPv6: %v %q %v", l.IPv6Range, l.Networks.IPv6, l.HostLink.Addr6)
	}
	for _, c := range l.Clusters {
		for _, n := range c.Nodes {
			for _, r := range n.Routes {
				if r.Dst.Addr().Is6() {
					t.Errorf("%s: IPv6 route %s", n.Name, r.Dst)
				}
			}
		}
	}
}

func TestFamiliesTheLabCannotBuildAreRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		spec func(*Spec)
		want string
	}{
		"IPv6 first": {func(s *Spec) { s.IPFamilies = []string{IPv6, IPv4} }, `lab.ipFamilies: Unsupported value`},
		"IPv6 twice": {func(s *Spec) { s.IPFamilies = []string{IPv6, IPv6} }, `lab.ipFamilies: Unsupported value`},
		"IPv6 only, IPv4 ClusterSet": {func(s *Spec) { s.IPFamilies = []string{IPv6} },
			`spec.clusters[0].podCIDRs[0]: Invalid value: "10.8.0.0/16": an IPv6-only lab's clusters have no IPv4`},
		"flannel":        {func(s *Spec) { s.Clusters = map[string]ClusterShape{"c1": {CNI: CNIFlannel}} }, `lab.clusters[c1].cni: Invalid value: "flannel": a dual-stack lab's clusters run the bridge CNI`},
		"gateway NAT":    {func(s *Spec) { s.Clusters = map[string]ClusterShape{"c2": {GatewayNAT: GatewayNATOneToOne}} }, `lab.clusters[c2].gatewayNAT`},
		"IPv6 range pin": {func(s *Spec) { s.Networks.IPv6 = "fd00::/64" }, `lab.networks.ipv6: Invalid value: "fd00::/64": too small`},
		"not ULA":        {func(s *Spec) { s.Networks.IPv6 = "2001:db8::/48" }, `outside the unique local addresses`},
		"IPv6 range, v4": {func(s *Spec) { s.IPFamilies = nil; s.Networks.IPv6 = "fd10:1ab::/48" }, `only a lab with IPv6`},
	} {
		t.Run(name, func(t *testing.T) {
			spec := DefaultSpec("")
			spec.IPFamilies = []string{IPv4, IPv6}
			tc.spec(&spec)
			_, errs := Compute(loadExample(t, "basic"), spec)
			if got := errs.ToAggregate(); got == nil || !strings.Contains(got.Error(), tc.want) {
				t.Errorf("errors %v, want one containing %q", got, tc.want)
			}
		})
	}
}

// TestIPv6RangeIsClearOfTheHost: this project's machines hold fd00::2/64 with a default
// route; the lab takes the first candidate clear of them, and refuses a pin over them.
func TestIPv6RangeIsClearOfTheHost(t *testing.T) {
	host := []HostRange{
		{netip.MustParsePrefix("::/0"), "route ::/0 via fd00::1 dev eth0"},
		{netip.MustParsePrefix("fd00::/64"), "route fd00::/64 dev eth0"},
		{netip.MustParsePrefix("fd10:1ab:0:5::/64"), "route fd10:1ab:0:5::/64 dev vpn0"},
	}
	got, errs := ChooseNetworks(loadExample(t, "basic"), Networks{}, host, true)
	if len(errs) > 0 || got.IPv6 != "fd11:1ab::/48" {
		t.Errorf("IPv6 range %q (%v), want fd11:1ab::/48", got.IPv6, errs.ToAggregate())
	}
	_, errs = ChooseNetworks(loadExample(t, "basic"), Networks{IPv6: "fd00::/16"}, host, true)
	if got := errs.ToAggregate(); got == nil || !strings.Contains(got.Error(), "overlaps the host's route fd00::/64 dev eth0") {
		t.Errorf("a pin over the host's network: %v", got)
	}
}

// TestClusterSetsIPv6CIDRsAreTheClusters: once the API takes IPv6 CIDRs, a ClusterSet
// that lists them gives a dual-stack lab's clusters those (a /64 per node from the pod
// CIDR) instead of the lab's own, and the host routes them into the lab; an IPv4 lab
// refuses them, and so does a dual-stack lab whose IPv6 range they overlap.
func TestClusterSetsIPv6CIDRsAreTheClusters(t *testing.T) {
	cs := loadExample(t, "basic")
	cs.Spec.Clusters[1].PodCIDRs = append(cs.Spec.Clusters[1].PodCIDRs, "fd99:9::/56")
	cs.Spec.Clusters[1].ServiceCIDRs = append(cs.Spec.Clusters[1].ServiceCIDRs, "fd99:99::/112")
	spec := DefaultSpec("")
	spec.IPFamilies = []string{IPv4, IPv6}
	l, errs := Compute(cs, spec)
	if len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	c1, _ := l.Cluster("c1")
	c2, _ := l.Cluster("c2")
	for what, got := range map[string]string{
		"c1 (the lab's own)":    fmt.Sprint(c1.PodCIDRs(), c1.ServiceCIDRs(), c1.Nodes[0].PodCIDR6),
		"c2 (the ClusterSet's)": fmt.Sprint(c2.PodCIDRs(), c2.ServiceCIDRs(), c2.Nodes[0].PodCIDR6, c2.Nodes[2].PodCIDR6),
		"host routes":           fmt.Sprint(l.HostLink.Routes),
	} {
		want := map[string]string{
			"c1 (the lab's own)":    "[10.8.0.0/16 fd10:1ab:0:8000::/56] [10.88.0.0/16 fd10:1ab:0:100::/112] fd10:1ab:0:8001::/64",
			"c2 (the ClusterSet's)": "[10.9.0.0/16 fd99:9::/56] [10.99.0.0/16 fd99:99::/112] fd99:9:0:1::/64 fd99:9:0:3::/64",
			"host routes":           "[10.8.0.0/16 10.9.0.0/16 10.88.0.0/16 10.99.0.0/16 10.250.0.0/16 198.18.0.0/24 198.18.1.0/24 fd10:1ab::/48 fd99:9::/56 fd99:99::/112]",
		}[what]
		if got != want {
			t.Errorf("%s: %s, want %s", what, got, want)
		}
	}
	if _, errs := Compute(cs, DefaultSpec("")); errs.ToAggregate() == nil ||
		!strings.Contains(errs.ToAggregate().Error(), `spec.clusters[1].podCIDRs[1]: Invalid value: "fd99:9::/56": an IPv6 CIDR needs a lab with IPv6`) {
		t.Errorf("IPv6 CIDRs in an IPv4 lab: %v", errs.ToAggregate())
	}
	cs.Spec.Clusters[1].PodCIDRs[1] = "fd10:1ab:0:8000::/56"
	if _, errs := Compute(cs, spec); errs.ToAggregate() != nil {
		t.Errorf("a ClusterSet range over the first candidate: %v, want the next candidate", errs.ToAggregate())
	}
	spec.Networks.IPv6 = "fd10:1ab::/48"
	if _, errs := Compute(cs, spec); errs.ToAggregate() == nil || !strings.Contains(errs.ToAggregate().Error(), "overlaps spec.clusters[1].podCIDRs[1]") {
		t.Errorf("a pinned IPv6 range over a ClusterSet range: %v", errs.ToAggregate())
	}
	cs.Spec.Clusters[1].PodCIDRs[1] = "fd99:9::/63"
	spec.Networks.IPv6 = ""
	if _, errs := Compute(cs, spec); errs.ToAggregate() == nil || !strings.Contains(errs.ToAggregate().Error(), "too small for 3 nodes with a /64 each") {
		t.Errorf("a pod CIDR too small: %v", errs.ToAggregate())
	}
}
