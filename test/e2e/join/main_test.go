package join

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// env is the lab the tests share; TestMain brings it up once. A gateway and a plain node
// a cluster: traffic from a plain node crosses through the active gateway.
var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, labtest.Config{
		ClusterSet: "test/e2e/join/testdata/clusterset.yaml",
		Spec: topology.Spec{ClusterSet: "join", Hub: true, Gateways: 1, Workers: 1, SampleWorkloads: true,
			Unjoined: []string{"c3"}},
		PortBase: 31443,
	}, &env))
}
