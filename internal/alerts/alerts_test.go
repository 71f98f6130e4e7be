package alerts

import (
	"testing"

	"github.com/prometheus/common/model"
)

// An alert of Strait's says where it fires, what about, and its runbook's anchor, which
// is the alert's name in lower case as docs/runbooks.md's headings make it; any other
// alert is not Strait's to report.
func TestAlertsSayWhatAndWhere(t *testing.T) {
	a, ok := of(model.Metric{"alertname": "StraitPeerNotConnected", "severity": "critical", "cluster": "c1", "peer": "c2", "node": "c1-gw-1", "job": "x"})
	if !ok {
		t.Fatal("StraitPeerNotConnected not taken for Strait's")
	}
	want := Alert{Name: "StraitPeerNotConnected", Severity: "critical", Cluster: "c1", About: "peer=c2 node=c1-gw-1",
		Runbook: "https://github.com/straitnet/strait/blob/main/docs/runbooks.md#straitpeernotconnected"}
	if a != want {
		t.Errorf("got %+v, want %+v", a, want)
	}
	if _, ok := of(model.Metric{"alertname": "Watchdog"}); ok {
		t.Error("Watchdog taken for one of Strait's")
	}
}
