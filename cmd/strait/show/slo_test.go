package show

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/straitnet/strait/internal/alerts"
)

// The table a person reads: one row per SLO and what it is for, percentiles in ms or s,
// "-" where the buckets give none, and each firing alert with where it fires and its
// runbook.
func TestSLOTablesNameWhatTheyAreFor(t *testing.T) {
	r := &SLOReport{Window: "1h",
		SLOs: []SLO{
			{SLO: "failover", For: "c2/wireguard", Count: 3, P50: 0.9, P99: 1.4, Max: 1.5},
			{SLO: "ClusterSet into every member", For: "strait-system.demo", Count: 12, P50: 0.04, P99: math.NaN(), Max: 0.25},
		},
		Firing: []alerts.Alert{{Name: "StraitPeerNotConnected", Severity: "critical", Cluster: "c1", About: "peer=c2 node=c1-gw-1",
			Runbook: alerts.RunbookBase + "straitpeernotconnected"}},
	}
	var b bytes.Buffer
	if err := printSLOs(&b, r, ""); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"SLO (last 1h)", "failover", "c2/wireguard", "900ms", "1.40s", "1.50s",
		"strait-system.demo", "40ms", " - ",
		"StraitPeerNotConnected", "c1", "critical", "peer=c2 node=c1-gw-1", "docs/runbooks.md#straitpeernotconnected",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if got := rowKey(model.Metric{"cluster": "c2"}, "cluster, driver"); got != "c2/-" {
		t.Errorf("rowKey without a driver = %q", got)
	}
}
