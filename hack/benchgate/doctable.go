package main

import (
	"fmt"
	"strings"

	"github.com/straitnet/strait/hack/benchfmt"
)

// benchPackages names where each gated benchmark runs, by the part of its name before
// any "/", for the performance page's table.
var benchPackages = map[string]string{
	"Compute": "plan", "PlannerOneChange": "plan", "MemberObjects": "plan", "MemberDigests": "plan",
	"HubScale": "controllers", "ExportToImport": "controllers",
	"Resolve": "dns/resolver", "Answer": "dns/server", "ServeUDP": "dns/server", "Rebuild": "dns/source",
	"DNSAgainstCoreDNSHosts": "hack/dns-bench.sh",
	"Failover":               "nodeagent/agent",
	"GatewayFailover":        "test/e2e, the lab",
}

// calibrationTable is docs/performance.md's table of the floors: each with where it
// runs, today's figure, its margin, the floor, and the calibration runs' figures, every
// figure cited to docs/bench/bench-gate.txt ([^gate]). The page holds it as this prints
// it (TestPerformancePageShowsTheFloors), so it cannot drift from floors.go.
func calibrationTable(fs []floor, runs benchfmt.Figures) (string, error) {
	var b strings.Builder
	b.WriteString("| Benchmark (package) | Unit | Today | Margin | Floor | The calibration runs |\n|---|---|---|---|---|---|\n")
	for _, f := range fs {
		pkg, ok := benchPackages[strings.SplitN(f.Bench, "/", 2)[0]]
		if !ok {
			return "", fmt.Errorf("benchmark %s: no package in benchPackages", f.Bench)
		}
		vs := runs[f.Bench][f.Unit]
		if len(vs) == 0 {
			return "", fmt.Errorf("%s %s: no calibration run", f.Bench, f.Unit)
		}
		figs := make([]string, len(vs))
		for i, v := range vs {
			figs[i] = num(v)
		}
		bound := map[bool]string{true: "≥ ", false: "≤ "}[f.MoreIsBetter] + limit(f.Limit())
		fmt.Fprintf(&b, "| %s (%s) | %s | %s[^gate] | %.0f %% | %s | %s[^gate] |\n",
			f.Bench, pkg, f.Unit, num(f.Today), f.Margin*100, bound, strings.Join(figs, ", "))
	}
	return b.String(), nil
}
