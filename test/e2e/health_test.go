package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// TestPeerHealthIsMeasured: every cluster's Peer for the other shows a measured latency
// (kubectl get peers' LATENCY column) and so does the active gateway's
// strait_agent_peer_latency_seconds — on the lab's gateways, whichever node is active and
// whether or not a pod runs there; while the WAN drops packets the measured loss rises,
// and it falls back to zero when the WAN heals.
func TestPeerHealthIsMeasured(t *testing.T) {
	env.Require(t)
	for _, pair := range [][2]string{{"c1", "c2"}, {"c2", "c1"}} {
		latencyMeasured(t, pair[0], pair[1], "")
	}

	heal := dropOnWAN(t, 50)
	require.Eventually(t, converge, "c1 measures loss to c2 while the WAN drops half the packets", func() error {
		st, err := peerStatus(t, "c1", "c2")
		if err != nil {
			return err
		}
		ratio, err := peerMetric(t, "c1", "strait_agent_peer_loss_ratio", "c2")
		if err != nil {
			return err
		}
		if st.LossPercent == 0 || ratio == 0 {
			return fmt.Errorf("loss %d%% in status, %g in metrics: %s", st.LossPercent, ratio, connectedMessage(st))
		}
		t.Logf("WAN drops 50%%: c1 → c2 loss %d%% (status), %g (metric)", st.LossPercent, ratio)
		return nil
	})
	heal()
	require.Eventually(t, converge, "c1's loss to c2 back to zero once the WAN heals", func() error {
		st, err := peerStatus(t, "c1", "c2")
		if err == nil && (st.LossPercent != 0 || st.LatencyMicros <= 0) {
			err = fmt.Errorf("loss %d%%, latency %dµs", st.LossPercent, st.LatencyMicros)
		}
		return err
	})
}

// latencyMeasured waits until cluster's Peer remote shows what the active gateway
// measured over driver ("": whichever runs): Connected for the Peer's current
// generation (a driver switch changes the Peer, so a figure from before it does not
// count), a latency above zero and no loss, as `kubectl get peers` shows them, and a
// latency above zero in the gateway's strait_agent_peer_latency_seconds.
func latencyMeasured(t *testing.T, cluster, remote string, driver straitv1.CableDriver) {
	t.Helper()
	require.Eventually(t, converge, cluster+"'s Peer "+remote+" has a measured latency", func() error {
		p, err := peer(t, cluster, remote)
		if err != nil {
			return err
		}
		ep := p.Spec.Endpoint
		if ep == nil {
			return fmt.Errorf("the Peer has no endpoint yet")
		}
		if driver != "" && ep.Driver != driver {
			return fmt.Errorf("the Peer's endpoint is %+v, not over %s yet", ep, driver)
		}
		st := p.Status
		c := apimeta.FindStatusCondition(st.Conditions, straitv1.ConditionConnected)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != p.Generation {
			return fmt.Errorf("generation %d: %s", p.Generation, connectedMessage(st))
		}
		if st.LatencyMicros <= 0 || st.LossPercent != 0 {
			return fmt.Errorf("latency %dµs, loss %d%%: %s", st.LatencyMicros, st.LossPercent, connectedMessage(st))
		}
		v, err := peerMetric(t, cluster, "strait_agent_peer_latency_seconds", remote)
		if err != nil {
			return err
		}
		if v <= 0 {
			return fmt.Errorf("strait_agent_peer_latency_seconds %g", v)
		}
		t.Logf("%s → %s over %s: latency %dµs in the Peer, %.0fµs in the metric", cluster, remote, ep.Driver, st.LatencyMicros, v*1e6)
		return nil
	})
}

// peer is cluster's Peer for remote, read from its API server.
func peer(t *testing.T, cluster, remote string) (*straitv1.Peer, error) {
	p := &straitv1.Peer{}
	err := env.Client(t, cluster).Get(context.Background(), client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: remote}, p)
	return p, err
}

func peerStatus(t *testing.T, cluster, remote string) (straitv1.PeerStatus, error) {
	p, err := peer(t, cluster, remote)
	return p.Status, err
}

func connectedMessage(st straitv1.PeerStatus) string {
	for _, c := range st.Conditions {
		if c.Type == straitv1.ConditionConnected {
			return fmt.Sprintf("%s (generation %d) %s", c.Status, c.ObservedGeneration, c.Message)
		}
	}
	return "no Connected condition"
}

// peerMetric scrapes one per-peer series from cluster's active gateway.
func peerMetric(t *testing.T, cluster, name, remote string) (float64, error) {
	gw := env.ActiveGateway(t, cluster)
	body, err := labtest.GetWithin(gw.Namespace, "http://127.0.0.1:9342/metrics", 5*time.Second)
	if err != nil {
		return 0, err
	}
	prefix := fmt.Sprintf("%s{cluster=%q} ", name, remote)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s in its metrics", gw.Name, strings.TrimSpace(prefix))
}

// dropOnWAN makes the WAN bridge drop percent of the UDP packets between gateways (every
// cable driver's outer packets; 100 is a partition) with a table of this test's own; heal removes it, and so
// does the end of the test.
func dropOnWAN(t testing.TB, percent int) (heal func()) {
	t.Helper()
	const table = "strait-e2e-loss"
	match := fmt.Sprintf("numgen random mod 100 < %d ", percent)
	if percent >= 100 {
		match = "" // a partition
	}
	rules := fmt.Sprintf(`table bridge %s {
	chain forward {
		type filter hook forward priority 0; policy accept;
		meta l4proto udp %sdrop
	}
}
`, table, match)
	nft := func(stdin string, args ...string) error {
		cmd := exec.Command("ip", append([]string{"netns", "exec", topology.WANNamespace, "nft"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("nft %v: %w: %s", args, err, out)
		}
		return nil
	}
	if err := nft(rules, "-f", "-"); err != nil {
		t.Fatal(err)
	}
	healed := false
	heal = func() {
		if !healed {
			healed = true
			if err := nft("", "delete", "table", "bridge", table); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(heal)
	return heal
}
