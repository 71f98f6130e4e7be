package kustomize

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/straitnet/strait/test/promcheck"
)

// TestDashboardQueriesParse: every query of the monitoring component's dashboards is
// PromQL that Prometheus parses (promtool checks them as recording rules), and every
// panel but a row has one. That they return data from a real clusterset is test/e2e's
// TestSLOMetricsAgreeWithTheTests.
func TestDashboardQueriesParse(t *testing.T) {
	promtool := promcheck.Promtool(t)
	files, err := filepath.Glob("components/monitoring/dashboards/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards (%v)", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			UID    string `json:"uid"`
			Panels []struct {
				Title   string `json:"title"`
				Type    string `json:"type"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" {
			t.Errorf("%s: no uid (Grafana keys a provisioned dashboard by it)", f)
		}
		var rules []map[string]string
		for i, p := range d.Panels {
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: panel %q has no query", f, p.Title)
			}
			for j, q := range p.Targets {
				rules = append(rules, map[string]string{"record": fmt.Sprintf("dashboard:panel%d:query%d", i, j), "expr": q.Expr})
			}
		}
		file := filepath.Join(t.TempDir(), "queries.rules.yaml")
		out, err := yaml.Marshal(map[string]any{"groups": []map[string]any{{"name": "dashboard", "rules": rules}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, out, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput(); err != nil {
			t.Errorf("%s: a query does not parse: %v\n%s", f, err, out)
		}
	}
}
