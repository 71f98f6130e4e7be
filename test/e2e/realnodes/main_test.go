package realnodes

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// env is the one real-node lab of this package.
var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, labtest.Config{
		ClusterSet: "examples/clusterset/basic/clusterset.yaml",
		Spec:       topology.Spec{ClusterSet: "basic", Hub: true, Gateways: 2, Workers: 1, SampleWorkloads: true},
		PortBase:   36443,
	}, &env))
}
