package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// TestGatewayMetrics: what a user's Prometheus scrapes from the agents (port 9342): the
// active gateway says so and reports the remote cluster connected through the cable,
// with its latency and the cable's byte counters; a passive gateway reports no peer.
func TestGatewayMetrics(t *testing.T) {
	env.Require(t)
	scrape := func(ns string) (string, error) {
		body, err := labtest.GetWithin(ns, "http://127.0.0.1:9342/metrics", 5*time.Second)
		return string(body), err
	}
	active := env.ActiveGateway(t, "c1")
	require.Eventually(t, labtest.Converge, "c1's active gateway's metrics", func() error {
		m, err := scrape(active.Namespace)
		if err != nil {
			return err
		}
		for _, want := range []string{
			"strait_agent_gateway_active 1\n",
			`strait_agent_peer_connected{peer="c2"} 1` + "\n",
			`strait_agent_peer_loss_ratio{family="ipv4",peer="c2"} 0` + "\n",
			`strait_agent_peer_latency_seconds{family="ipv4",peer="c2"} `,
			`strait_agent_cable_tx_bytes_total{peer="c2"} `,
			"strait_agent_sync_duration_seconds_count ",
			"strait_agent_last_sync_ok 1\n",
		} {
			if !strings.Contains(m, want) {
				return fmt.Errorf("%s: no %q in its metrics", active.Name, strings.TrimSpace(want))
			}
		}
		return nil
	})
	c, _ := env.Topo.Cluster("c1")
	for _, n := range c.Nodes {
		if !n.Gateway || n.Name == active.Name {
			continue
		}
		m, err := scrape(n.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m, "strait_agent_gateway_active 0\n") || strings.Contains(m, "strait_agent_peer_connected{") {
			t.Errorf("passive gateway %s: want gateway_active 0 and no peer series:\n%s", n.Name, grepStrait(m))
		}
	}
}

// grepStrait keeps Strait's own lines of a scrape.
func grepStrait(m string) string {
	var out []string
	for _, l := range strings.Split(m, "\n") {
		if strings.HasPrefix(l, "strait_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
