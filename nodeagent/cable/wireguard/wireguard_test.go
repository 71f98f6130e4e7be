package wireguard_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/wireguard"
	"github.com/straitnet/strait/test/cabletest"
)

// keyEnv hands a gateway process its cluster's private key.
const keyEnv = "STRAIT_TEST_WIREGUARD_KEY"

func TestMain(m *testing.M) {
	cabletest.ServeGatewayIfChild(func() (*cabletest.Agent, error) {
		key, err := wgtypes.ParseKey(os.Getenv(keyEnv))
		if err != nil {
			return nil, err
		}
		d, err := wireguard.New(wireguard.Config{PrivateKey: key, Routing: cabletest.Routing})
		if err != nil {
			return nil, err
		}
		return &cabletest.Agent{Driver: d, Dump: dumpDevice}, nil
	})
	os.Exit(m.Run())
}

// dumpDevice is strait-wg as wgctrl sees it, without counters and handshake times.
func dumpDevice(context.Context) (string, error) {
	c, err := wgctrl.New()
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	dev, err := c.Device(wireguard.DeviceName)
	if err != nil {
		return "", err
	}
	lines := []string{fmt.Sprintf("wg %s %s public %s port %d", dev.Name, dev.Type, dev.PublicKey, dev.ListenPort)}
	for _, p := range dev.Peers {
		lines = append(lines, fmt.Sprintf("peer %s endpoint %s allowed %v keepalive %s", p.PublicKey, p.Endpoint, p.AllowedIPs, p.PersistentKeepaliveInterval))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n", nil
}

var suite = cabletest.Suite{
	Port:           51899,
	ConnectTimeout: 10 * time.Second,
	Roams:          true,
	Overheads:      cable.Overheads{IPv4: 60, IPv6: 80},
	IPv6Underlay:   true,
	Setup: func(t testing.TB, _ *cabletest.Lab, _ cabletest.Site) ([]string, func()) {
		key, err := wgtypes.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		return []string{keyEnv + "=" + key.String()}, nil
	},
}

func TestCable(t *testing.T) { cabletest.Run(t, suite) }

func TestCableThroughOneToOneNAT(t *testing.T) { cabletest.RunNAT(t, suite, cabletest.NATOneToOne) }

func TestCableBehindMasquerade(t *testing.T) { cabletest.RunNAT(t, suite, cabletest.NATMasquerade) }

func BenchmarkThroughput(b *testing.B) { cabletest.Throughput(b, suite) }
