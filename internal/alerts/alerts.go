package alerts

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// RunbookBase is where every alert's runbook is, as its runbook_url annotation says.
const RunbookBase = "https://github.com/straitnet/strait/blob/main/docs/runbooks.md#"

// Alert is one of Strait's alerts firing.
type Alert struct {
	Name     string `json:"name"`
	Severity string `json:"severity,omitempty"`
	// Cluster is the member it fires in (its Prometheus's external label), or "" for
	// the Prometheus asked (the hub's).
	Cluster string `json:"cluster,omitempty"`
	// About is the labels that say what it is about: member, peer, node, pod, clusterset.
	About   string `json:"about,omitempty"`
	Runbook string `json:"runbook"`
}

// Firing is every alert of Strait's firing in the Prometheus of api: its own (the alerts
// API) and those it federates from the members (their ALERTS series), sorted.
func Firing(ctx context.Context, api promv1.API) ([]Alert, error) {
	res, err := api.Alerts(ctx)
	if err != nil {
		return nil, fmt.Errorf("alerts: %w", err)
	}
	var out []Alert
	for _, a := range res.Alerts {
		if a.State == promv1.AlertStateFiring {
			if al, ok := of(model.Metric(a.Labels)); ok {
				out = append(out, al)
			}
		}
	}
	v, _, _, err := api.Query(ctx, `ALERTS{alertstate="firing", alertname=~"Strait.+"}`, time.Now())
	if err != nil {
		return nil, fmt.Errorf("federated alerts: %w", err)
	}
	vec, _ := v.(model.Vector)
	for _, s := range vec {
		if al, ok := of(s.Metric); ok && !slices.Contains(out, al) {
			out = append(out, al)
		}
	}
	slices.SortFunc(out, func(a, b Alert) int {
		return strings.Compare(a.Cluster+"\x00"+a.Name+"\x00"+a.About, b.Cluster+"\x00"+b.Name+"\x00"+b.About)
	})
	return out, nil
}

// of is the alert of labels m, if it is one of Strait's.
func of(m model.Metric) (Alert, bool) {
	name := string(m["alertname"])
	if !strings.HasPrefix(name, "Strait") {
		return Alert{}, false
	}
	var about []string
	for _, l := range []model.LabelName{"clusterset", "member", "peer", "node", "pod"} {
		if v := m[l]; v != "" {
			about = append(about, fmt.Sprintf("%s=%s", l, v))
		}
	}
	return Alert{Name: name, Severity: string(m["severity"]), Cluster: string(m["cluster"]),
		About: strings.Join(about, " "), Runbook: RunbookBase + strings.ToLower(name)}, true
}
