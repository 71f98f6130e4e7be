package onetoone

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/e2e/nat"
	"github.com/straitnet/strait/test/labtest"
)

var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, nat.Config(topology.GatewayNATOneToOne, 31443), &env))
}

func TestGatewaysBehindOneToOneNAT(t *testing.T) { nat.Suite(t, &env, topology.GatewayNATOneToOne) }
