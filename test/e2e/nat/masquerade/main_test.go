package masquerade

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/e2e/nat"
	"github.com/straitnet/strait/test/labtest"
)

var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, nat.Config(topology.GatewayNATMasquerade, 32443), &env))
}

func TestGatewaysBehindMasquerade(t *testing.T) { nat.Suite(t, &env, topology.GatewayNATMasquerade) }
