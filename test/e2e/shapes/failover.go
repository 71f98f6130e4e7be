package shapes

import (
	"syscall"
	"testing"
	"time"

	"github.com/straitnet/strait/test/labtest"
)

// GatewayCrashFailsOver crashes (SIGKILL), one after the other, the agent of each
// crash's cluster's active gateway while a pod of the flow's sending cluster on a plain
// node GETs a pod of its receiving cluster on a plain node: the other gateway takes
// over and the GETs are answered again within the lab's crash bound (Env.CrashBound) of the crash,
// with the CNI's masquerade and kube-proxy's rules of the shape on the way.
func GatewayCrashFailsOver(t *testing.T, env *labtest.Env, crashes []Crash) {
	for _, c := range crashes {
		t.Run(c.Cluster+" while "+c.Flow.String(), func(t *testing.T) {
			src, target := env.CrossTraffic(t, c.Flow.From, c.Flow.To)
			h := env.FailOver(t, c.Cluster, syscall.SIGKILL, src, target)
			t.Logf("figure: failover, %s's active gateway %s crashed, %s took over: %s from a plain node without an answer for %s from the crash (bound %s)",
				c.Cluster, h.From, h.To, c.Flow, h.Outage.Longest.Round(time.Millisecond), env.CrashBound())
		})
	}
}
