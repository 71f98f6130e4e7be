package nat

import (
	"os"
	"testing"

	"github.com/straitnet/strait/test/labtest"
)

// env is the lab the NAT checks share; TestMain brings it up once.
var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, Config(31443), &env))
}

func TestGatewaysBehindNAT(t *testing.T) { Suite(t, &env) }
