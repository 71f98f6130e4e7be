package globalnet

import (
	"os"
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// env is the lab every test here shares; TestMain brings it up once. g1 masquerades as
// kind does (kindnet's masquerade in iptables, kube-proxy in iptables mode): Strait's
// global SNAT must win over it; g2 has the same masquerade in an nftables table of its
// own, kube-proxy in nftables mode. Its hub syncs the clusterset repo with Argo CD, where
// every other lab's uses Flux (argocd_test.go).
var env labtest.Env

func TestMain(m *testing.M) {
	os.Exit(labtest.Main(m, labtest.Config{
		ClusterSet: "examples/clusterset/globalnet/clusterset.yaml",
		Spec:       globalnetSpec(),
		PortBase:   27443,
	}, &env))
}

func globalnetSpec() topology.Spec {
	s := topology.DefaultSpec("globalnet")
	s.GitOps = topology.GitOpsArgoCD
	s.Clusters = map[string]topology.ClusterShape{
		"g1": {CNI: topology.CNIKindnetMasq, Masquerade: topology.MasqueradeIPTables, KubeProxyMode: topology.KubeProxyIPTables},
		"g2": {CNI: topology.CNIKindnetMasq, Masquerade: topology.MasqueradeNFTables},
	}
	return s
}
