package agent

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/health"
	"github.com/straitnet/strait/test/promcheck"
)

// gathered is every series of reg by its name and labels as PromQL writes them
// (`name{a="b"}`); a histogram gives its _count.
func gathered(t testing.TB, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(labels)
			name := f.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetGauge() != nil:
				out[name] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[name] = m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[name+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// TestPeerMetricsFollowTheRound: each health round replaces the per-cluster series, so
// a removed peer disappears and a node that is no longer active reports none.
func TestPeerMetricsFollowTheRound(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, func() bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	m.setPeers([]peerHealth{
		{peer: "c2", connected: true, families: familyChecks{
			{family: corev1.IPv4Protocol, r: health.Result{Sent: 5, Received: 5, RTT: 2 * time.Millisecond}},
			{family: corev1.IPv6Protocol, r: health.Result{Sent: 5, Received: 4, RTT: 3 * time.Millisecond}},
		},
			conn: &cable.Connection{ClusterID: "c2", Connected: true, RxBytes: 1000, TxBytes: 2000}},
		{peer: "c3"},
	})
	got := gathered(t, reg)
	for series, want := range map[string]float64{
		`strait_agent_peer_connected{peer="c2"}`:                     1,
		`strait_agent_peer_latency_seconds{family="ipv4",peer="c2"}`: 0.002,
		`strait_agent_peer_loss_ratio{family="ipv4",peer="c2"}`:      0,
		`strait_agent_peer_latency_seconds{family="ipv6",peer="c2"}`: 0.003,
		`strait_agent_peer_loss_ratio{family="ipv6",peer="c2"}`:      0.2,
		`strait_agent_cable_rx_bytes_total{peer="c2"}`:               1000,
		`strait_agent_cable_tx_bytes_total{peer="c2"}`:               2000,
		`strait_agent_peer_connected{peer="c3"}`:                     0,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present: %v), want %v", series, v, ok, want)
		}
	}
	// c3 was never probed and has no cable: no latency or bytes to report.
	for _, series := range []string{`strait_agent_peer_latency_seconds{family="ipv4",peer="c3"}`,
		`strait_agent_peer_latency_seconds{family="ipv6",peer="c3"}`, `strait_agent_cable_rx_bytes_total{peer="c3"}`} {
		if _, ok := got[series]; ok {
			t.Errorf("%s reported for a peer without a measurement", series)
		}
	}

	// A failover to this node, timed: one observation for its driver.
	if became := m.setActive(true); !became {
		t.Error("setActive(true) on a standby did not say it became active")
	}
	if m.setActive(true) {
		t.Error("setActive(true) on the active gateway said it became active again")
	}
	m.failedOver("wireguard", "gw-2", 1200*time.Millisecond)
	if n := gathered(t, reg)[`strait_agent_failover_seconds{driver="wireguard"}_count`]; n != 1 {
		t.Errorf("strait_agent_failover_seconds{driver=wireguard} counted %v failovers, want 1", n)
	}

	// The agent's series as a user's CI would lint them.
	promcheck.Metrics(t, promcheck.Gathered(t, reg), "strait_agent_")

	m.setPeers([]peerHealth{{peer: "c3", connected: true}})
	got = gathered(t, reg)
	if _, ok := got[`strait_agent_peer_connected{peer="c2"}`]; ok {
		t.Error("a removed peer's series stays")
	}
	m.setPeers(nil)
	for series := range gathered(t, reg) {
		if strings.Contains(series, "peer=") {
			t.Errorf("%s stays after this node stopped being the active gateway", series)
		}
	}
}

// TestTakeoversCountBecomingActive: each time the node becomes the active gateway counts
// once, however many passes it stays so.
func TestTakeoversCountBecomingActive(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, func() bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range []struct {
		active bool
		want   float64
	}{{false, 0}, {true, 1}, {true, 1}, {false, 1}, {false, 1}, {true, 2}} {
		m.setActive(step.active)
		if got := gathered(t, reg)["strait_agent_gateway_takeovers_total"]; got != step.want {
			t.Fatalf("after pass %d (active %v): %v takeovers, want %v", i, step.active, got, step.want)
		}
	}
}

// The elector's reports land in the gateway's series: renewals by result and
// step-downs by reason, every reason's series there at zero before its first.
func TestElectionReportFeedsTheGatewaySeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg, func() bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	const late, other = `strait_agent_gateway_step_downs_total{reason="renew-deadline"}`, `strait_agent_gateway_step_downs_total{reason="other-holder"}`
	got := gathered(t, reg)
	for _, s := range []string{late, other, `strait_agent_gateway_step_downs_total{reason="fence"}`} {
		if v, ok := got[s]; !ok || v != 0 {
			t.Errorf("before any step-down: %s = %v (present %v), want 0", s, v, ok)
		}
	}
	r := m.electionReport()
	r.Renewal(120*time.Millisecond, true)
	r.Renewal(40*time.Millisecond, true)
	r.Renewal(700*time.Millisecond, false)
	r.StepDown("renew-deadline")
	got = gathered(t, reg)
	for s, want := range map[string]float64{
		`strait_agent_gateway_lease_renewal_seconds{result="ok"}_count`:     2,
		`strait_agent_gateway_lease_renewal_seconds{result="failed"}_count`: 1,
		late:  1,
		other: 0,
	} {
		if got[s] != want {
			t.Errorf("%s = %v, want %v", s, got[s], want)
		}
	}
}
