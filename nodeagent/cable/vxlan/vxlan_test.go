package vxlan_test

import (
	"net/netip"
	"os"
	"testing"
	"time"

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

var suite = cabletest.Suite{Port: 4799, ConnectTimeout: 5 * time.Second, NoNATTraversal: true}

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
