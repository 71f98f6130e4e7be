package shapes

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// env: one lab of three shapes. c1 as kind ships (kindnet's masquerade in iptables,
// kube-proxy in iptables mode); c2 as k3s does (flannel VXLAN with --ip-masq through
// iptables, kube-proxy in iptables mode); c3 flannel with its masquerade in its own
// nftables table (EnableNFTables) and kube-proxy in nftables mode: no iptables rule
// there.
var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, Config(map[string]topology.ClusterShape{
		"c1": {CNI: topology.CNIKindnetMasq, Masquerade: topology.MasqueradeIPTables, KubeProxyMode: topology.KubeProxyIPTables},
		"c2": {CNI: topology.CNIFlannel, Masquerade: topology.MasqueradeIPTables, KubeProxyMode: topology.KubeProxyIPTables},
		"c3": {CNI: topology.CNIFlannel, Masquerade: topology.MasqueradeNFTables},
	}, 29443), &env))
}

// plan: the ring c1 → c2 → c3 → c1 puts every shape on both ends of a cable in three
// directions (two more ways would add the same shapes again). The crashes, one a
// cluster: c2's and c1's active gateway while c1 → c2 flows, so the shape masquerading
// with kindnet is crashed where it sends and flannel's iptables where it receives (the
// gateway forwards a remote pod's connection to a pod on another node: flannel's `!
// -s <network> -d <network>` masquerade), and c3's while c3 → c1 flows, flannel's
// nftables where it sends (`-s <network>` masquerade).
var plan = Plan{
	Across: Ring("c1", "c2", "c3"),
	Crashes: []Crash{
		{Cluster: "c2", Flow: Edge{"c1", "c2"}},
		{Cluster: "c1", Flow: Edge{"c1", "c2"}},
		{Cluster: "c3", Flow: Edge{"c3", "c1"}},
	},
}

func TestShapes(t *testing.T) { Suite(t, &env, plan) }
