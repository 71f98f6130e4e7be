package e2e

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"sync"
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

// Peer loss while the WAN drops wanLossDrop % of the UDP packets between the gateways,
// each way. A health check (an echo request through the cable and its reply) is
// answered only when both cross, so it is lost with probability lossExpected = 1 − (1 −
// 0.5)² = 75 %, each independently of the others. The mean of the rounds' LossPercent
// over a window is then the loss of all its probes, a binomial share with standard
// deviation σ = √(0.75 · 0.25 / probes). lossRounds rounds of five probes (120) give
// σ = 3.95 points; the test allows lossSigmas σ (±13.8 points at 120 probes: a correct
// agent fails it about once in 2,000 runs), so a Peer that counts one direction's loss
// (50 %, 6.3 σ off) or reads the last round's share wrongly fails it. Half the rounds
// are read from c1's Peer c2 and half from c2's Peer c1, at once: both gateways probe
// through the same lossy WAN, each probe lost independently, so the 120 probes take one
// minute at the default 5 s --health-interval instead of two.
const (
	wanLossDrop  = 50
	lossExpected = 0.75
	lossRounds   = 24
	lossSigmas   = 3.5
)

// TestPeerHealthIsMeasured: every cluster's Peer for the other shows a measured latency
// (kubectl get peers' LATENCY column) and so does the active gateway's
// strait_agent_peer_latency_seconds — on the lab's gateways, whichever node is active and
// whether or not a pod runs there; while the WAN drops half the UDP packets each way, the
// loss c1's Peer c2 and c2's Peer c1 read averages 75 % within the binomial spread of
// their probes, c1's metric says what its Peer says, and the loss falls back to zero when
// the WAN heals.
func TestPeerHealthIsMeasured(t *testing.T) {
	env.Require(t)
	for _, pair := range [][2]string{{"c1", "c2"}, {"c2", "c1"}} {
		latencyMeasured(t, pair[0], pair[1], "")
	}

	heal := dropOnWAN(t, wanLossDrop)
	pairs := [][2]string{{"c1", "c2"}, {"c2", "c1"}}
	read := make([][]healthRound, len(pairs))
	errs := make([]error, len(pairs))
	var wg sync.WaitGroup
	for i, pair := range pairs {
		c := env.Client(t, pair[0])
		wg.Go(func() { read[i], errs[i] = healthRounds(t, c, pair[0], pair[1], lossRounds/len(pairs)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var rounds []healthRound
	for _, r := range read {
		rounds = append(rounds, r...)
	}
	var sum, sent, received int
	var percents []string
	for _, r := range rounds {
		sum += int(r.lossPercent)
		sent, received = sent+r.sent, received+r.received
		percents = append(percents, strconv.Itoa(int(r.lossPercent)))
	}
	mean := float64(sum) / float64(len(rounds)) / 100
	tolerance := lossSigmas * math.Sqrt(lossExpected*(1-lossExpected)/float64(sent))
	t.Logf("WAN drops %d%% of UDP each way: c1's Peer c2 and c2's Peer c1 read %s %% loss over %d rounds (%d of %d probes answered): mean %.1f %%, want %.0f ± %.1f %%",
		wanLossDrop, strings.Join(percents, " "), len(rounds), received, sent, 100*mean, 100*lossExpected, 100*tolerance)
	if math.Abs(mean-lossExpected) > tolerance {
		t.Errorf("the Peers read %.1f %% loss on average over %d probes while the WAN dropped %d%% each way; want %.0f ± %.1f %% (%.1f σ)",
			100*mean, sent, wanLossDrop, 100*lossExpected, 100*tolerance, lossSigmas)
	}
	if lost := 1 - float64(received)/float64(sent); math.Abs(lost-mean) > 0.005 {
		t.Errorf("the Peers: the rounds' LossPercent average %.1f %%, their messages say %.1f %% of the probes went unanswered", 100*mean, 100*lost)
	}
	require.Eventually(t, 2*time.Minute, "strait_agent_peer_loss_ratio says what c1's Peer c2 says", func() error {
		st, err := peerStatus(t, "c1", "c2")
		if err != nil {
			return err
		}
		ratio, err := peerMetric(t, "c1", "strait_agent_peer_loss_ratio", "ipv4", "c2")
		if err != nil {
			return err
		}
		if st.LossPercent == 0 || math.Abs(ratio-float64(st.LossPercent)/100) > 0.005 {
			return fmt.Errorf("loss %d%% in status, %g in metrics: %s", st.LossPercent, ratio, connectedMessage(st))
		}
		return nil
	})
	heal()
	require.Eventually(t, labtest.Converge, "c1's loss to c2 back to zero once the WAN heals", func() error {
		st, err := peerStatus(t, "c1", "c2")
		if err == nil && (st.LossPercent != 0 || st.LatencyMicros <= 0) {
			err = fmt.Errorf("loss %d%%, latency %dµs", st.LossPercent, st.LatencyMicros)
		}
		return err
	})
}

// healthRound is one health-check round as a Peer shows it.
type healthRound struct {
	lossPercent    int32
	sent, received int
}

// healthRounds reads cluster's Peer remote until it has seen n health-check rounds that
// began after the call. Each round is one status write of the active gateway, which
// changes the cable's byte counters (the probes cross the cable, answered or not: two
// rounds that lost every probe differ in what was sent) and says in its healthChecks
// how many probes it sent and how many were answered (the first family's: IPv4 here). The first write seen may
// be of a round that began before the call, and does not count.
// It reads through c, a client of cluster, and reports through t only with Logf and
// Errorf, so that it can run beside another.
func healthRounds(t *testing.T, c client.Client, cluster, remote string, n int) ([]healthRound, error) {
	var rounds []healthRound
	var last string
	seen := 0
	// Ten seconds a round is twice the agent's default interval; a round every 5 s needs
	// no faster reading than twice a second.
	for deadline := time.Now().Add(time.Duration(n+2) * 10 * time.Second); len(rounds) < n; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			return rounds, fmt.Errorf("%s's Peer %s: %d of %d health-check rounds seen", cluster, remote, len(rounds), n)
		}
		p, err := peerVia(c, remote)
		if err != nil {
			t.Logf("%s's Peer %s: %v", cluster, remote, err)
			continue
		}
		st := p.Status
		key := fmt.Sprintf("%d %d %d %d %s", st.TxBytes, st.RxBytes, st.LatencyMicros, st.LossPercent, connectedMessage(st))
		if key == last {
			continue
		}
		last = key
		if seen++; seen <= 2 {
			continue // the status as it was, then a round that may have begun before
		}
		if len(st.HealthChecks) == 0 {
			t.Errorf("%s's Peer %s: a status write without a health-check round: %s", cluster, remote, connectedMessage(st))
			continue
		}
		hc := st.HealthChecks[0]
		rounds = append(rounds, healthRound{lossPercent: st.LossPercent, sent: int(hc.Sent), received: int(hc.Received)})
	}
	return rounds, nil
}

// latencyMeasured waits until cluster's Peer remote shows what the active gateway
// measured over driver ("": whichever runs): Connected for the Peer's current
// generation (a driver switch changes the Peer, so a figure from before it does not
// count), a latency above zero and no loss, as `kubectl get peers` shows them, and a
// latency above zero in the gateway's strait_agent_peer_latency_seconds.
func latencyMeasured(t *testing.T, cluster, remote string, driver straitv1.CableDriver) {
	t.Helper()
	require.Eventually(t, labtest.Converge, cluster+"'s Peer "+remote+" has a measured latency", func() error {
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
		v, err := peerMetric(t, cluster, "strait_agent_peer_latency_seconds", "ipv4", remote)
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
	return peerVia(env.Client(t, cluster), remote)
}

// peerVia is the Peer for remote, read through c, a client of its cluster.
func peerVia(c client.Client, remote string) (*straitv1.Peer, error) {
	p := &straitv1.Peer{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: remote}, p)
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
func peerMetric(t *testing.T, cluster, name, family, remote string) (float64, error) {
	gw := env.ActiveGateway(t, cluster)
	body, err := labtest.GetWithin(gw.Namespace, "http://127.0.0.1:9342/metrics", 5*time.Second)
	if err != nil {
		return 0, err
	}
	prefix := fmt.Sprintf("%s{family=%q,peer=%q} ", name, family, remote)
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
