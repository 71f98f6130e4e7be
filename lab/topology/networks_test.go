package topology

import (
	"net/netip"
	"strings"
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// thisMachine is the host network of this project's machines: a default route out of
// the machine through 192.0.2.1 and a resolver at 10.255.255.53.
var thisMachine = []HostRange{
	{netip.MustParsePrefix("0.0.0.0/0"), "route 0.0.0.0/0 via 192.0.2.1 dev eth0"},
	{netip.MustParsePrefix("192.0.2.0/24"), "route 192.0.2.0/24 dev eth0"},
	{netip.MustParsePrefix("192.0.2.2/32"), "address 192.0.2.2/24 on eth0"},
	{netip.MustParsePrefix("127.0.0.1/32"), "address 127.0.0.1/8 on lo"},
	{netip.MustParsePrefix("10.255.255.53/32"), "resolver 10.255.255.53 (/etc/resolv.conf)"},
}

func host(extra ...string) []HostRange {
	out := append([]HostRange{}, thisMachine...)
	for _, e := range extra {
		out = append(out, HostRange{netip.MustParsePrefix(e), "route " + e + " dev wg0"})
	}
	return out
}

func TestChooseNetworks(t *testing.T) {
	basic := func(mod func(*straitv1.ClusterSet)) *straitv1.ClusterSet {
		cs := &straitv1.ClusterSet{Spec: straitv1.ClusterSetSpec{Clusters: []straitv1.ClusterSpec{
			{Name: "c1", PodCIDRs: []string{"10.8.0.0/16"}, ServiceCIDRs: []string{"10.88.0.0/16"}},
			{Name: "c2", PodCIDRs: []string{"10.9.0.0/16"}, ServiceCIDRs: []string{"10.99.0.0/16"}},
		}}}
		if mod != nil {
			mod(cs)
		}
		return cs
	}
	globalnet := func(r string) func(*straitv1.ClusterSet) {
		return func(cs *straitv1.ClusterSet) {
			cs.Spec.Globalnet = &straitv1.GlobalnetSpec{Enabled: true, CIDRRange: r}
		}
	}
	defaults := Networks{LAN: "10.250.0.0/16", WAN: "198.18.0.0/24", Internet: "198.18.1.0/24"}
	for _, tc := range []struct {
		name string
		cs   *straitv1.ClusterSet
		pins Networks
		host []HostRange
		want Networks
		// errs are substrings of the one error each, in order.
		errs []string
	}{
		{name: "no host: the first candidates", cs: basic(nil), want: defaults},
		{name: "this machine: its network, default route and resolver are clear of the defaults", cs: basic(nil), host: thisMachine, want: defaults},
		{name: "a host route over the first LAN", cs: basic(nil), host: host("10.250.0.0/16"),
			want: Networks{LAN: "10.251.0.0/16", WAN: "198.18.0.0/24", Internet: "198.18.1.0/24"}},
		{name: "a host address inside the first LAN", cs: basic(nil), host: host("10.250.7.1/32", "10.251.0.0/24"),
			want: Networks{LAN: "10.249.0.0/16", WAN: "198.18.0.0/24", Internet: "198.18.1.0/24"}},
		{name: "a host route over all of benchmarking space", cs: basic(nil), host: host("198.18.0.0/15"),
			want: Networks{LAN: "10.250.0.0/16", WAN: "100.127.0.0/24", Internet: "100.127.1.0/24"}},
		{name: "a ClusterSet over the first LAN and WAN", cs: basic(func(cs *straitv1.ClusterSet) {
			cs.Spec.Clusters[0].PodCIDRs = []string{"10.250.0.0/15"}
			cs.Spec.Clusters[1].ServiceCIDRs = []string{"198.18.0.0/20"}
		}), host: thisMachine, want: Networks{LAN: "10.249.0.0/16", WAN: "198.18.16.0/24", Internet: "198.18.17.0/24"}},
		{name: "pins are kept", cs: basic(nil), host: thisMachine, pins: Networks{LAN: "172.20.0.0/16", Internet: "100.64.9.0/24"},
			want: Networks{LAN: "172.20.0.0/16", WAN: "198.18.0.0/24", Internet: "100.64.9.0/24"}},
		{name: "globalnet's range is the lab's too", cs: basic(globalnet("198.18.0.0/16")), host: thisMachine,
			want: Networks{LAN: "10.250.0.0/16", WAN: "100.127.0.0/24", Internet: "100.127.1.0/24"}},

		{name: "a pinned WAN over this machine's network", cs: basic(nil), host: thisMachine, pins: Networks{WAN: "192.0.2.0/24"},
			errs: []string{`lab.networks.wan: Invalid value: "192.0.2.0/24": overlaps the host's route 192.0.2.0/24 dev eth0, address 192.0.2.2/24 on eth0`}},
		{name: "a pod CIDR over a host route", cs: basic(func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[1].PodCIDRs = []string{"172.16.0.0/12"} }),
			host: host("172.17.0.0/16"),
			errs: []string{`spec.clusters[1].podCIDRs[0]: Invalid value: "172.16.0.0/12": overlaps the host's route 172.17.0.0/16 dev wg0`}},
		{name: "a service CIDR over the host's resolver", cs: basic(func(cs *straitv1.ClusterSet) { cs.Spec.Clusters[0].ServiceCIDRs = []string{"10.0.0.0/8"} }),
			host: thisMachine,
			errs: []string{`spec.clusters[0].serviceCIDRs[0]: Invalid value: "10.0.0.0/8": overlaps the host's resolver 10.255.255.53 (/etc/resolv.conf)`}},
		{name: "a global range over a host route", cs: basic(globalnet("")), host: host("242.1.0.0/16"),
			errs: []string{`spec.globalnet.cidrRange: Invalid value: "242.0.0.0/8": overlaps the host's route 242.1.0.0/16 dev wg0`}},
		{name: "a pinned LAN under a pod CIDR", cs: basic(nil), pins: Networks{LAN: "10.8.0.0/16"},
			errs: []string{`lab.networks.lan: Invalid value: "10.8.0.0/16": overlaps spec.clusters[0].podCIDRs[0] 10.8.0.0/16`}},
		{name: "pinned networks over each other", cs: basic(nil), pins: Networks{WAN: "100.64.0.0/24", Internet: "100.64.0.0/16"},
			errs: []string{`lab.networks.internet: Invalid value: "100.64.0.0/16": overlaps lab.networks.wan 100.64.0.0/24`}},
		{name: "a pinned LAN too small", cs: basic(nil), pins: Networks{LAN: "10.250.0.0/17"},
			errs: []string{`lab.networks.lan: Invalid value: "10.250.0.0/17": too small: the lab needs a /16 or larger`}},
		{name: "a pinned public range", cs: basic(nil), pins: Networks{Internet: "8.8.8.0/24"},
			errs: []string{`lab.networks.internet: Invalid value: "8.8.8.0/24": outside the ranges a lab may use`}},
		{name: "a pinned range with host bits", cs: basic(nil), pins: Networks{WAN: "100.64.0.1/24"},
			errs: []string{`lab.networks.wan: Invalid value: "100.64.0.1/24": has host bits set (want 100.64.0.0/24)`}},
		{name: "a pinned value that is no range", cs: basic(nil), pins: Networks{LAN: "10.250.0.0"},
			errs: []string{`lab.networks.lan: Invalid value: "10.250.0.0": netip.ParsePrefix("10.250.0.0"): no '/'`}},
		{name: "no candidate clear", cs: basic(nil), host: host("198.18.0.0/15", "100.64.0.0/10"),
			errs: []string{"lab.networks.wan: Required value: no default is clear (198.18.0.0/24 overlaps the host's route 198.18.0.0/15 dev wg0;",
				"lab.networks.internet: Required value: no default is clear"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := ChooseNetworks(tc.cs, tc.pins, tc.host, false)
			if len(errs) != len(tc.errs) {
				t.Fatalf("errors %v, want %d: %q", errs, len(tc.errs), tc.errs)
			}
			for i, e := range errs {
				if !strings.Contains(e.Error(), tc.errs[i]) {
					t.Errorf("error %d:\n got %s\nwant it to contain %s", i, e, tc.errs[i])
				}
			}
			if len(tc.errs) > 0 {
				return
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			// Whatever was chosen is clear of the host (but its default route) and of the ClusterSet.
			for _, s := range []string{got.LAN, got.WAN, got.Internet} {
				p := netip.MustParsePrefix(s)
				if over := hostOverlaps(p, tc.host); len(over) > 0 {
					t.Errorf("%s chosen over the host's %v", p, over)
				}
				for _, r := range clusterSetRanges(tc.cs) {
					if r.prefix.Overlaps(p) {
						t.Errorf("%s chosen over %s", p, r)
					}
				}
			}
		})
	}
}

// TestNetworkCandidatesAreLabRanges: every default is a range the lab may use, none is
// documentation space (this machine reaches real servers there) and no two overlap, so a
// choice never takes one network over another.
func TestNetworkCandidatesAreLabRanges(t *testing.T) {
	var all []netip.Prefix
	for _, list := range [][]string{networkCandidates.lan, networkCandidates.wan, networkCandidates.internet} {
		for _, s := range list {
			all = append(all, netip.MustParsePrefix(s))
		}
	}
	docs := []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("203.0.113.0/24")}
	for i, p := range all {
		if !inLabRanges(p) {
			t.Errorf("candidate %s is outside the lab's ranges", p)
		}
		for _, d := range docs {
			if d.Overlaps(p) {
				t.Errorf("candidate %s is documentation space %s", p, d)
			}
		}
		for _, q := range all[i+1:] {
			if p.Overlaps(q) {
				t.Errorf("candidates %s and %s overlap", p, q)
			}
		}
	}
}
