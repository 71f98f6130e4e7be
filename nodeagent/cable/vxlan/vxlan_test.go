package vxlan_test

import (
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/vxlan"
	"github.com/straitnet/strait/test/cabletest"
)

func TestMain(m *testing.M) {
	cabletest.ServeGatewayIfChild(func() (*cabletest.Agent, error) {
		d, err := vxlan.New(vxlan.Config{Routing: cabletest.Routing})
		return &cabletest.Agent{Driver: d}, err
	})
	os.Exit(m.Run())
}

var suite = cabletest.Suite{Port: 4799, ConnectTimeout: 5 * time.Second, NoNATTraversal: true,
	Overheads: cable.Overheads{IPv4: 50}}

func TestCable(t *testing.T) { cabletest.Run(t, suite) }

func TestCableThroughOneToOneNAT(t *testing.T) { cabletest.RunNAT(t, suite, cabletest.NATOneToOne) }

func TestCableBehindMasquerade(t *testing.T) { cabletest.RunNAT(t, suite, cabletest.NATMasquerade) }

func BenchmarkThroughput(b *testing.B) { cabletest.Throughput(b, suite) }

func TestVTEP(t *testing.T) {
	for _, tc := range []struct {
		ip, want string
		err      bool
	}{
		{ip: "192.0.2.1", want: "243.0.2.1"},
		{ip: "198.51.100.7", want: "243.51.100.7"},
		{ip: "::ffff:192.0.2.9", want: "243.0.2.9"},
		{ip: "2001:db8::1", err: true},
	} {
		got, err := vxlan.VTEP(netip.MustParseAddr(tc.ip))
		if tc.err {
			if err == nil {
				t.Errorf("VTEP(%s) = %s, want an error", tc.ip, got)
			}
			continue
		}
		if err != nil || got != netip.MustParseAddr(tc.want) {
			t.Errorf("VTEP(%s) = %s, %v; want %s", tc.ip, got, err, tc.want)
		}
	}
}

func TestVTEP6AndMACFollowTheAdvertisedAddress(t *testing.T) {
	for _, tc := range []struct{ ip, vtep6, mac string }{
		{ip: "198.18.0.1", vtep6: "fdf3:7301::c612:1", mac: "0a:f3:c6:12:00:01"},
		{ip: "::ffff:203.0.113.7", vtep6: "fdf3:7301::cb00:7107", mac: "0a:f3:cb:00:71:07"},
	} {
		ip := netip.MustParseAddr(tc.ip)
		got, err := vxlan.VTEP6(ip)
		if err != nil || got != netip.MustParseAddr(tc.vtep6) || !vxlan.VTEP6Prefix.Contains(got) {
			t.Errorf("VTEP6(%s) = %s, %v; want %s", tc.ip, got, err, tc.vtep6)
		}
		if mac := vxlan.MAC(ip).String(); mac != tc.mac {
			t.Errorf("MAC(%s) = %s, want %s", tc.ip, mac, tc.mac)
		}
	}
	if got, err := vxlan.VTEP6(netip.MustParseAddr("fd73:18::1")); err == nil {
		t.Errorf("VTEP6 of an IPv6 gateway address = %s, want an error", got)
	}
}
