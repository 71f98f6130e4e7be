package agent

import (
	"os"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/wireguard"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/cabletest"
)

// wireguardKeyEnv hands a lab gateway process its cluster's WireGuard private key.
const wireguardKeyEnv = "STRAIT_TEST_WIREGUARD_KEY"

// TestMain lets the test binary serve as the lab's helper processes: a charon sidecar
// (ipsec) or a gateway process running the wireguard driver inside a node's namespace.
func TestMain(m *testing.M) {
	cabletest.RunCharonIfChild()
	cabletest.ServeGatewayIfChild(func() (*cabletest.Agent, error) {
		key, err := wgtypes.ParseKey(os.Getenv(wireguardKeyEnv))
		if err != nil {
			return nil, err
		}
		d, err := wireguard.New(wireguard.Config{PrivateKey: key,
			Routing: cable.Routing{Table: route.Table, Protocol: route.CableProtocol}})
		if err != nil {
			return nil, err
		}
		return &cabletest.Agent{Driver: d}, nil
	})
	os.Exit(m.Run())
}
