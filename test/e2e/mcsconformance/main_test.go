package mcsconformance

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// env is the lab the suite runs in: test/conformance's ClusterSet and lab.
var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, labtest.Config{
		ClusterSet: "test/conformance/clusterset.yaml",
		Spec: topology.Spec{ClusterSet: "conformance", Hub: true, Gateways: 1, Workers: 0,
			IPFamilies: []string{topology.IPv4, topology.IPv6}},
		PortBase: 30443,
	}, &env))
}
