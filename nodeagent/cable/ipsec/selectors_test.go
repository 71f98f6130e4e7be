package ipsec

import (
	"net/netip"
	"slices"
	"testing"
)

func TestSelectorAddrs(t *testing.T) {
	pfx := netip.MustParsePrefix
	for _, tc := range []struct {
		name  string
		owned []string
		cidrs []netip.Prefix
		want  []netip.Prefix
	}{
		{name: "pod CIDR holds the bridge address, service CIDR gets its last address",
			owned: []string{"203.0.113.11", "10.10.1.1"}, cidrs: []netip.Prefix{pfx("10.10.0.0/16"), pfx("10.11.0.0/16")},
			want: []netip.Prefix{pfx("10.11.255.255/32")}},
		{name: "globalnet: the health-check address is owned",
			owned: []string{"242.1.255.255"}, cidrs: []netip.Prefix{pfx("242.1.0.0/16")}},
		{name: "unmasked and odd prefix lengths",
			cidrs: []netip.Prefix{pfx("10.96.3.4/12"), pfx("192.0.2.0/25")},
			want:  []netip.Prefix{pfx("10.111.255.255/32"), pfx("192.0.2.127/32")}},
		{name: "IPv6", cidrs: []netip.Prefix{pfx("fd00:10::/108")},
			want: []netip.Prefix{pfx("fd00:10::f:ffff/128")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var owned []netip.Addr
			for _, s := range tc.owned {
				owned = append(owned, netip.MustParseAddr(s))
			}
			if got := selectorAddrs(owned, tc.cidrs); !slices.Equal(got, tc.want) {
				t.Errorf("selectorAddrs = %v, want %v", got, tc.want)
			}
		})
	}
}
