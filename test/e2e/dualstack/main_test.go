package dualstack

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// env is the lab the tests share: the basic ClusterSet (IPv4, as the API takes it while
// the node agents carry IPv4 alone) over dual-stack clusters, a gateway and a plain node
// a cluster. The basic suite's lab becomes dual-stack itself once Strait carries IPv6
// and the MCS conformance suite, whose Services ask for PreferDualStack, passes there.
var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, labtest.Config{
		ClusterSet: "examples/clusterset/basic/clusterset.yaml",
		Spec: topology.Spec{ClusterSet: "dualstack", Hub: true, Gateways: 1, Workers: 1, SampleWorkloads: true,
			IPFamilies: []string{topology.IPv4, topology.IPv6}},
		PortBase: 32443,
	}, &env))
}

func members() []string { return []string{"c1", "c2"} }
