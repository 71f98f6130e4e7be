package ipv6only

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// env is the lab the tests share: the ipv6only ClusterSet (c1 and c2, IPv6 CIDRs alone)
// on IPv6-only clusters, a gateway and a plain node a cluster, and the hub (IPv4, which
// reaches the members' API servers over the lab's management network).
var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, labtest.Config{
		ClusterSet: "examples/clusterset/ipv6only/clusterset.yaml",
		Spec: topology.Spec{ClusterSet: "ipv6only", Hub: true, Gateways: 1, Workers: 1, SampleWorkloads: true,
			IPFamilies: []string{topology.IPv6}},
		PortBase: 28443,
	}, &env))
}
