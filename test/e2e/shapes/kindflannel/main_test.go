package kindflannel

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/e2e/shapes"
	"github.com/straitnet/strait/test/labtest"
)

// env: c1 as kind ships (kindnet's masquerade in iptables, kube-proxy in iptables mode),
// c2 as k3s does (flannel with --ip-masq through iptables), kube-proxy in iptables mode.
var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, shapes.Config(map[string]topology.ClusterShape{
		"c1": {CNI: topology.CNIKindnetMasq, Masquerade: topology.MasqueradeIPTables, KubeProxyMode: topology.KubeProxyIPTables},
		"c2": {CNI: topology.CNIFlannel, Masquerade: topology.MasqueradeIPTables, KubeProxyMode: topology.KubeProxyIPTables},
	}, 29443), &env))
}

func TestShape(t *testing.T) { shapes.Suite(t, &env) }
