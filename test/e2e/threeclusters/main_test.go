package threeclusters

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// env is the lab every test here shares; TestMain brings it up once. One gateway node a
// cluster keeps the three control planes lean.
var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, labtest.Config{
		ClusterSet: "test/e2e/threeclusters/testdata/clusterset.yaml",
		Spec:       topology.Spec{ClusterSet: "trio", Hub: true, Gateways: 1, Workers: 0, SampleWorkloads: true},
		PortBase:   28443,
	}, &env))
}
