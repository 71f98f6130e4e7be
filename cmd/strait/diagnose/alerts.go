package diagnose

import (
	"context"
	"fmt"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/straitnet/strait/internal/alerts"
)

// checkAlerts is the line of each of Strait's alerts firing in the Prometheus given with
// --prometheus: not a check of its own, but what the members' Prometheus servers saw.
const checkAlerts = "alerts"

// alertResults are a "fail" line for each critical alert firing and a "warn" line for
// each other one, in the cluster it fires in ("hub" for the Prometheus asked), naming
// its runbook; one "pass" line when none fires.
func alertResults(ctx context.Context, url string) ([]Result, error) {
	c, err := promapi.NewClient(promapi.Config{Address: url})
	if err != nil {
		return nil, fmt.Errorf("--prometheus %q: %w", url, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	firing, err := alerts.Firing(ctx, promv1.NewAPI(c))
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", url, err)
	}
	return judgeAlerts(firing), nil
}

func judgeAlerts(firing []alerts.Alert) []Result {
	if len(firing) == 0 {
		return []Result{{Check: checkAlerts, Cluster: "-", Status: Pass, Detail: "no alert of Strait's firing"}}
	}
	out := make([]Result, 0, len(firing))
	for _, a := range firing {
		status := Warn
		if a.Severity == "critical" {
			status = Fail
		}
		cluster := a.Cluster
		if cluster == "" {
			cluster = "hub"
		}
		detail := a.Name + " firing"
		if a.About != "" {
			detail += " (" + a.About + ")"
		}
		out = append(out, Result{Check: checkAlerts, Cluster: cluster, Status: status, Detail: detail,
			Fix: "runbook: " + a.Runbook})
	}
	return out
}
