package shapes

import (
	"syscall"
	"testing"
	"time"

	"github.com/straitnet/strait/test/labtest"
)

// GatewayCrashFailsOver crashes (SIGKILL) the agent of c2's active gateway, then c1's,
// while c1's pod on a plain node GETs c2's pod on a plain node: the other gateway takes
// over and the GETs are answered again within labtest.CrashFailoverBound of the crash,
// with the CNI's masquerade and kube-proxy's rules of the shape on the way.
func GatewayCrashFailsOver(t *testing.T, env *labtest.Env) {
	for _, cluster := range []string{"c2", "c1"} {
		t.Run(cluster, func(t *testing.T) {
			src, target := env.CrossTraffic(t, "c1", "c2")
			h := env.FailOver(t, cluster, syscall.SIGKILL, src, target)
			t.Logf("figure: failover, %s's active gateway %s crashed, %s took over: c1 → c2 from a plain node without an answer for %s from the crash (bound %s)",
				cluster, h.From, h.To, h.Outage.Longest.Round(time.Millisecond), labtest.CrashFailoverBound)
		})
	}
}
