package shapes

import (
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// Suite runs every shape check on a lab, as the tests of the packages below call it.
// The uninstall goes last: it leaves the lab without Strait.
func Suite(t *testing.T, env *labtest.Env) {
	env.Require(t)
	t.Run("traffic between clusters keeps the caller", func(t *testing.T) { AcrossBothWays(t, env) })
	t.Run("the clusters' own networking is unchanged", func(t *testing.T) { OwnNetworkingIsUnchanged(t, env) })
	t.Run("a bulk transfer through the cable has no black hole", func(t *testing.T) { BulkTransferHasNoBlackHole(t, env) })
	t.Run("a gateway crash fails over within the bound", func(t *testing.T) { GatewayCrashFailsOver(t, env) })
	t.Run("the bypass survives the CNI and kube-proxy rewriting their rules", func(t *testing.T) { BypassSurvivesRewrites(t, env) })
	t.Run("the uninstall leaves the CNI's masquerade as it was", func(t *testing.T) { UninstallLeavesTheCNIAsItWas(t, env) })
}

// Config is the lab of a shape package: the shapes ClusterSet, a hub, two gateways and a
// plain node a cluster, the sample workloads, and each cluster's shape.
func Config(clusters map[string]topology.ClusterShape, portBase int) labtest.Config {
	return labtest.Config{
		ClusterSet: ClusterSet,
		Spec: topology.Spec{ClusterSet: "shapes", Hub: true, Gateways: 2, Workers: 1, SampleWorkloads: true,
			Clusters: clusters},
		PortBase: portBase,
	}
}
