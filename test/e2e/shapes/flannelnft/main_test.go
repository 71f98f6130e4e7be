package flannelnft

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/e2e/shapes"
	"github.com/straitnet/strait/test/labtest"
)

// env: both clusters on flannel with its nftables masquerade (EnableNFTables) and
// kube-proxy in nftables mode: no iptables rule anywhere.
var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, shapes.Config(map[string]topology.ClusterShape{
		"c1": {CNI: topology.CNIFlannel, Masquerade: topology.MasqueradeNFTables},
		"c2": {CNI: topology.CNIFlannel, Masquerade: topology.MasqueradeNFTables},
	}, 30443), &env))
}

func TestShape(t *testing.T) { shapes.Suite(t, &env) }
