package topology

import (
	"net/netip"
	"strings"
	"testing"
)

// Behind its router's NAT a gateway node has a LAN address only and leaves through the
// router; behind a 1:1 NAT the router holds a public WAN address per gateway (the slot
// the gateway's own would have had) and the Node's ExternalIP is that address.
func TestGatewaysBehindTheRoutersNAT(t *testing.T) {
	cs := loadExample(t, "basic")
	for _, nat := range []string{GatewayNATOneToOne, GatewayNATMasquerade} {
		t.Run(nat, func(t *testing.T) {
			spec := DefaultSpec("")
			spec.Clusters = map[string]ClusterShape{"c2": {GatewayNAT: nat}}
			l, errs := Compute(cs, spec)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			c1, c2 := l.Clusters[0], l.Clusters[1]
			if c1.Router.GatewayNAT != "" || len(c1.Router.Gateways) > 0 || c1.Router.NATRuleset() != "" {
				t.Errorf("c1's router translates: %+v", c1.Router)
			}
			for _, n := range c1.Nodes {
				if n.Gateway && (!n.WANAddr.IsValid() || n.ExternalIP.IsValid()) {
					t.Errorf("c1's %s: WAN %s, ExternalIP %s; want its own WAN address", n.Name, n.WANAddr, n.ExternalIP)
				}
			}
			var mapped []GatewayMapping
			for _, n := range c2.Nodes {
				if n.WANAddr.IsValid() {
					t.Errorf("%s has a WAN address %s behind the NAT", n.Name, n.WANAddr)
				}
				for _, k := range c2.Links {
					if k.Namespace == n.Namespace && k.Name == NodeWANLink {
						t.Errorf("%s has a WAN link", n.Name)
					}
				}
				if !n.Gateway {
					continue
				}
				m := GatewayMapping{Node: n.Name, Private: n.LANAddr.Addr()}
				if nat == GatewayNATOneToOne {
					m.Public = netip.PrefixFrom(n.ExternalIP, 24)
				} else if n.ExternalIP.IsValid() {
					t.Errorf("%s: ExternalIP %s behind masquerade", n.Name, n.ExternalIP)
				}
				mapped = append(mapped, m)
			}
			if got := c2.Router.Gateways; len(got) != 2 || got[0] != mapped[0] || got[1] != mapped[1] {
				t.Errorf("c2's router maps %+v, want %+v", got, mapped)
			}
			if nat == GatewayNATOneToOne {
				want := []string{"198.18.0.14/24", "198.18.0.15/24"}
				var got []string
				for _, p := range c2.Router.PublicAddrs() {
					got = append(got, p.String())
				}
				if strings.Join(got, " ") != strings.Join(want, " ") || c2.Router.WANAddr.String() != "198.18.0.13/24" {
					t.Errorf("c2's router: WAN %s, public %v; want 198.18.0.13/24 and %v", c2.Router.WANAddr, got, want)
				}
			} else if len(c2.Router.PublicAddrs()) > 0 {
				t.Errorf("behind masquerade the router holds %v", c2.Router.PublicAddrs())
			}
		})
	}
}

func TestRouterNATRuleset(t *testing.T) {
	gws := []GatewayMapping{
		{Node: "c2-gw-1", Private: netip.MustParseAddr("10.250.2.11"), Public: netip.MustParsePrefix("198.18.0.14/24")},
		{Node: "c2-gw-2", Private: netip.MustParseAddr("10.250.2.12"), Public: netip.MustParsePrefix("198.18.0.15/24")},
	}
	forward := `	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname "sl-wan" ip daddr { 10.250.2.11, 10.250.2.12 } ct state established,related accept
		iifname "sl-wan" ip daddr { 10.250.2.11, 10.250.2.12 } ct status dnat accept
		iifname "sl-wan" ip daddr { 10.250.2.11, 10.250.2.12 } drop
	}
}
`
	head := "add table ip lab-router\ndelete table ip lab-router\ntable ip lab-router {\n"
	oneToOne := head + `	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		iifname "sl-wan" ip daddr 198.18.0.14 dnat to 10.250.2.11
		iifname "sl-wan" ip daddr 198.18.0.15 dnat to 10.250.2.12
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "sl-wan" ip saddr 10.250.2.11 snat to 198.18.0.14
		oifname "sl-wan" ip saddr 10.250.2.12 snat to 198.18.0.15
	}
` + forward
	masq := []GatewayMapping{{Node: "c2-gw-1", Private: gws[0].Private}, {Node: "c2-gw-2", Private: gws[1].Private}}
	masquerade := head + `	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "sl-wan" ip saddr { 10.250.2.11, 10.250.2.12 } masquerade
	}
` + forward
	for _, tc := range []struct {
		router Router
		want   string
	}{
		{Router{}, ""},
		{Router{GatewayNAT: GatewayNATOneToOne, Gateways: gws}, oneToOne},
		{Router{GatewayNAT: GatewayNATMasquerade, Gateways: masq}, masquerade},
	} {
		if got := tc.router.NATRuleset(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.router.GatewayNAT, got, tc.want)
		}
	}
}
