package shapes

import (
	"testing"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

// Edge is one direction traffic between clusters is checked in: pods of From reach To.
type Edge struct{ From, To string }

func (e Edge) String() string { return e.From + " → " + e.To }

// Ring is every cluster sending to the next one and the last to the first: each cluster
// sends to one cluster and receives from another, in as many directions as there are
// clusters. Two clusters make the two ways between them.
func Ring(clusters ...string) []Edge {
	var out []Edge
	for i, c := range clusters {
		out = append(out, Edge{c, clusters[(i+1)%len(clusters)]})
	}
	return out
}

// Crash is one gateway crash: Cluster's active gateway agent is killed while Flow's
// traffic (a pod on a plain node of Flow.From GETting a pod on a plain node of
// Flow.To) crosses it.
type Crash struct {
	Cluster string
	Flow    Edge
}

// Plan says which clusters the checks between clusters run on: the directions of
// traffic (every cluster must send in one and receive in another) and the crashes (one
// on every cluster whose shape differs). The checks of one cluster (its own networking,
// diagnose, the bypass, the uninstall) run on every member.
type Plan struct {
	Across  []Edge
	Crashes []Crash
}

// Suite runs every shape check on a lab, as the package's test calls it. The uninstall
// goes last: it leaves the lab without Strait.
func Suite(t *testing.T, env *labtest.Env, p Plan) {
	env.Require(t)
	t.Run("traffic between clusters keeps the caller", func(t *testing.T) { Across(t, env, p.Across) })
	t.Run("strait diagnose passes every check", func(t *testing.T) { DiagnosePasses(t, env) })
	t.Run("the clusters' own networking is unchanged", func(t *testing.T) { OwnNetworkingIsUnchanged(t, env) })
	t.Run("a bulk transfer through the cable has no black hole", func(t *testing.T) { BulkTransferHasNoBlackHole(t, env, p.Across) })
	t.Run("a gateway crash fails over within the bound", func(t *testing.T) { GatewayCrashFailsOver(t, env, p.Crashes) })
	t.Run("the bypass survives the CNI and kube-proxy rewriting their rules", func(t *testing.T) { BypassSurvivesRewrites(t, env, p.Across) })
	t.Run("the uninstall leaves the CNI's masquerade as it was", func(t *testing.T) { UninstallLeavesTheCNIAsItWas(t, env) })
}

// Config is the lab of the shapes: the shapes ClusterSet, a hub, two gateways and a
// plain node a cluster, the sample workloads, and each cluster's shape.
//
// The agents run docs/agent.md's timing for an API server that stalls past the default
// renew deadline (topology.StallProneLease: a 2 s Lease renewed every 500 ms within
// 1.5 s): four control planes and ten nodes saturate the 2-core machine (load average
// 60-90), where a Lease write was seen to take over 700 ms often enough that the active
// gateways stepped down again and again, their fences closing their cables for seconds
// (a takeover in 842 ms, traffic back after 4.9 s; strait diagnose's firewall check
// finding a fence empty). The 1 s default is the basic lab's (test/e2e) to hold.
func Config(clusters map[string]topology.ClusterShape, portBase int) labtest.Config {
	lease := topology.StallProneLease
	return labtest.Config{
		ClusterSet: ClusterSet,
		Spec: topology.Spec{ClusterSet: "shapes", Hub: true, Gateways: 2, Workers: 1, SampleWorkloads: true,
			Clusters: clusters, GatewayLease: &lease},
		PortBase: portBase,
	}
}
