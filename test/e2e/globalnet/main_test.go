package globalnet

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// env is the lab every test here shares; TestMain brings it up once.
var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, labtest.Config{
		ClusterSet: "examples/clusterset/globalnet/clusterset.yaml",
		Spec:       topology.DefaultSpec("globalnet"),
		PortBase:   27443,
	}, &env))
}
