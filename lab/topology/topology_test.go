package topology

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/plan"
)

func loadExample(t *testing.T, name string) *straitv1.ClusterSet {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "clusterset", name, "clusterset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := plan.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestComputeExamples(t *testing.T) {
	for _, tc := range []struct {
		example    string
		spec       Spec
		namespaces []string
		// node name → LAN, WAN (or ""), pod CIDR, routes "dst via"
		nodes map[string][4]string
	}{{
		example: "basic",
		spec:    DefaultSpec(""),
		namespaces: []string{"sl-hub-cp", "sl-wan", "sl-internet",
			"sl-c1-lan", "sl-c1-router", "sl-c1-cp", "sl-c1-gw-1", "sl-c1-gw-2", "sl-c1-node-1",
			"sl-c2-lan", "sl-c2-router", "sl-c2-cp", "sl-c2-gw-1", "sl-c2-gw-2", "sl-c2-node-1"},
		// The WAN: the internet .1, then per cluster its router and its gateways from .10.
		nodes: map[string][4]string{
			"c1-gw-1":   {"10.250.1.11/24", "198.18.0.11/24", "10.8.1.0/24", "10.8.2.0/24 via 10.250.1.12, 10.8.3.0/24 via 10.250.1.13, 10.88.0.0/16 via 10.250.1.2, 0.0.0.0/0 via 10.250.1.1"},
			"c1-node-1": {"10.250.1.13/24", "", "10.8.3.0/24", "10.8.1.0/24 via 10.250.1.11, 10.8.2.0/24 via 10.250.1.12, 10.88.0.0/16 via 10.250.1.2, 0.0.0.0/0 via 10.250.1.1"},
			"c2-gw-2":   {"10.250.2.12/24", "198.18.0.15/24", "10.9.2.0/24", "10.9.1.0/24 via 10.250.2.11, 10.9.3.0/24 via 10.250.2.13, 10.99.0.0/16 via 10.250.2.2, 0.0.0.0/0 via 10.250.2.1"},
		},
	}, {
		example: "globalnet",
		spec:    Spec{Gateways: 1, Workers: 1},
		namespaces: []string{"sl-wan", "sl-internet",
			"sl-g1-lan", "sl-g1-router", "sl-g1-cp", "sl-g1-gw-1", "sl-g1-node-1",
			"sl-g2-lan", "sl-g2-router", "sl-g2-cp", "sl-g2-gw-1", "sl-g2-node-1"},
		nodes: map[string][4]string{
			// Identical pod CIDRs, separate LANs, distinct WAN addresses.
			"g1-gw-1": {"10.250.1.11/24", "198.18.0.11/24", "10.7.1.0/24", "10.7.2.0/24 via 10.250.1.12, 10.77.0.0/16 via 10.250.1.2, 0.0.0.0/0 via 10.250.1.1"},
			"g2-gw-1": {"10.250.2.11/24", "198.18.0.13/24", "10.7.1.0/24", "10.7.2.0/24 via 10.250.2.12, 10.77.0.0/16 via 10.250.2.2, 0.0.0.0/0 via 10.250.2.1"},
		},
	}} {
		t.Run(tc.example, func(t *testing.T) {
			l, errs := Compute(loadExample(t, tc.example), tc.spec)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if got := l.Namespaces(); !slices.Equal(got, tc.namespaces) {
				t.Errorf("namespaces:\n got %v\nwant %v", got, tc.namespaces)
			}
			seen := map[string]bool{}
			owned := []netip.Prefix{l.LANRange, l.WANSubnet, l.InternetRange}
			for _, c := range l.Clusters {
				if tc.spec.Hub && (!c.LANSubnet.Contains(c.HubAddr.Addr()) || c.HubAddr.Addr() == c.ControlPlane.LANAddr.Addr()) {
					t.Errorf("%s: hub address %s not a free address of the LAN %s", c.Name, c.HubAddr, c.LANSubnet)
				}
				if c.DNSServiceIP != nthAddr(c.ServiceCIDR.Addr(), 10) || !c.ServiceCIDR.Contains(c.APIServiceIP) {
					t.Errorf("%s: service IPs %s %s outside %s", c.Name, c.APIServiceIP, c.DNSServiceIP, c.ServiceCIDR)
				}
				for _, n := range c.Nodes {
					seen[n.Name] = true
					if !strings.HasPrefix(n.Namespace, Prefix) {
						t.Errorf("node namespace %q lacks the prefix", n.Namespace)
					}
					if !c.PodCIDR.Contains(n.PodGateway) || !n.PodCIDR.Contains(n.PodGateway) {
						t.Errorf("%s: pod gateway %s outside %s", n.Name, n.PodGateway, n.PodCIDR)
					}
					want, ok := tc.nodes[n.Name]
					if !ok {
						continue
					}
					wan := ""
					if n.WANAddr.IsValid() {
						wan = n.WANAddr.String()
					}
					var routes []string
					for _, r := range n.Routes {
						routes = append(routes, r.Dst.String()+" via "+r.Via.String())
					}
					got := [4]string{n.LANAddr.String(), wan, n.PodCIDR.String(), strings.Join(routes, ", ")}
					if got != want {
						t.Errorf("%s:\n got %q\nwant %q", n.Name, got, want)
					}
					if n.Gateway != (wan != "") {
						t.Errorf("%s: gateway %v but WAN %q", n.Name, n.Gateway, wan)
					}
				}
				for _, k := range c.Links {
					for _, name := range []string{k.Name, k.Peer, k.Namespace, k.PeerNamespace} {
						if !strings.HasPrefix(name, Prefix) {
							t.Errorf("%q lacks the prefix %q", name, Prefix)
						}
					}
					if len(k.Name) > 15 || len(k.Peer) > 15 {
						t.Errorf("link name %q/%q longer than IFNAMSIZ-1", k.Name, k.Peer)
					}
					if k.Addr.IsValid() && !slices.ContainsFunc(owned, func(p netip.Prefix) bool { return p.Contains(k.Addr.Addr()) }) {
						t.Errorf("link %s/%s address %s is not in a range the lab owns", k.Namespace, k.Name, k.Addr)
					}
				}
			}
			for name := range tc.nodes {
				if !seen[name] {
					t.Errorf("node %s missing", name)
				}
			}
		})
	}
}

func TestComputeLinksAreUnique(t *testing.T) {
	l, errs := Compute(loadExample(t, "three-clusters"), DefaultSpec(""))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	seen := map[string]bool{}
	addrs := map[netip.Addr]string{}
	for _, c := range l.Clusters {
		for _, k := range c.Links {
			for _, key := range []string{k.Namespace + "/" + k.Name, k.PeerNamespace + "/" + k.Peer} {
				if seen[key] {
					t.Errorf("link %s made twice", key)
				}
				seen[key] = true
			}
			if k.Addr.IsValid() {
				if prev, dup := addrs[k.Addr.Addr()]; dup && (k.Addr.Addr().Is4() && l.WANSubnet.Contains(k.Addr.Addr())) {
					t.Errorf("WAN address %s given to %s and %s", k.Addr, prev, k.Namespace)
				}
				addrs[k.Addr.Addr()] = k.Namespace
			}
		}
	}
}

func TestComputeRefuses(t *testing.T) {
	cs := func(pod, svc string) *straitv1.ClusterSet {
		return &straitv1.ClusterSet{Spec: straitv1.ClusterSetSpec{Clusters: []straitv1.ClusterSpec{{
			Name: "x", PodCIDRs: []string{pod}, ServiceCIDRs: []string{svc},
		}}}}
	}
	for _, tc := range []struct {
		name string
		cs   *straitv1.ClusterSet
		spec Spec
		want string
	}{
		{"no nodes", cs("10.8.0.0/16", "10.88.0.0/16"), Spec{}, "lab.gateways"},
		{"pinned LAN range under a pod CIDR", cs("10.250.0.0/16", "10.88.0.0/16"), pinned(Networks{LAN: "10.250.0.0/16"}),
			`lab.networks.lan: Invalid value: "10.250.0.0/16": overlaps spec.clusters[0].podCIDRs[0] 10.250.0.0/16`},
		{"pinned WAN under a service CIDR", cs("10.8.0.0/16", "198.18.0.0/16"), pinned(Networks{WAN: "198.18.0.0/24"}),
			`lab.networks.wan: Invalid value: "198.18.0.0/24": overlaps spec.clusters[0].serviceCIDRs[0] 198.18.0.0/16`},
		{"too many routers and gateways for the WAN", &straitv1.ClusterSet{Spec: straitv1.ClusterSetSpec{Clusters: manyClusters(81)}},
			Spec{Gateways: 2}, "lab.gateways: Too many: 243: must have at most 240 items"},
		{"pod CIDR too small", cs("10.8.0.0/24", "10.88.0.0/16"), DefaultSpec(""), "too small for 3 nodes"},
		{"IPv6 first", cs("fd00::/48", "10.88.0.0/16"), DefaultSpec(""), "must be IPv4"},
		{"public pod CIDR", cs("11.8.0.0/16", "10.88.0.0/16"), DefaultSpec(""), `spec.clusters[0].podCIDRs[0]: Invalid value: "11.8.0.0/16": outside the ranges a lab may use`},
		{"public globalnet range", &straitv1.ClusterSet{Spec: straitv1.ClusterSetSpec{
			Clusters:  []straitv1.ClusterSpec{{Name: "x", PodCIDRs: []string{"10.8.0.0/16"}, ServiceCIDRs: []string{"10.88.0.0/16"}, GlobalCIDR: "120.1.0.0/24"}},
			Globalnet: &straitv1.GlobalnetSpec{Enabled: true, CIDRRange: "120.0.0.0/8"}}}, DefaultSpec(""),
			`spec.globalnet.cidrRange: Invalid value: "120.0.0.0/8": outside`},
		{"hub name taken", &straitv1.ClusterSet{Spec: straitv1.ClusterSetSpec{Clusters: []straitv1.ClusterSpec{{
			Name: "hub", PodCIDRs: []string{"10.8.0.0/16"}, ServiceCIDRs: []string{"10.88.0.0/16"}}}}}, DefaultSpec(""), "lab hub's name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Compute(tc.cs, tc.spec)
			if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, errs)
			}
		})
	}
}

func pinned(n Networks) Spec {
	s := DefaultSpec("")
	s.Networks = n
	return s
}

// manyClusters are n clusters with pod CIDRs 10.<i>.0.0/16 and service CIDRs 172.16.<i>.0/24.
func manyClusters(n int) []straitv1.ClusterSpec {
	out := make([]straitv1.ClusterSpec, n)
	for i := range out {
		out[i] = straitv1.ClusterSpec{Name: fmt.Sprintf("c%d", i), PodCIDRs: []string{fmt.Sprintf("10.%d.0.0/16", i)},
			ServiceCIDRs: []string{fmt.Sprintf("172.16.%d.0/24", i)}}
	}
	return out
}
