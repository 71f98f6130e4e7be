package show

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/straitnet/strait/internal/alerts"
	"github.com/straitnet/strait/internal/cli"
)

// The SLOs `strait show slo` reads from a Prometheus that holds every member's series
// (the hub's, federating the members': docs/observability.md), each as the PromQL
// the documentation gives, by the labels a row is for.
var sloQueries = []struct {
	name, family, by string
}{
	{"ClusterSet into every member", "strait_hub_clusterset_propagation_seconds", "clusterset"},
	{"export into every member", "strait_hub_export_propagation_seconds", "clusterset"},
	{"change into DNS answers", "strait_dns_propagation_seconds", "cluster"},
	{"failover", "strait_agent_failover_seconds", "cluster, driver"},
	{"DNS answer", "strait_dns_request_duration_seconds", "cluster"},
}

// SLO is one row of `strait show slo`: a histogram's percentiles over the window and how
// many observations it holds, for one ClusterSet, member or member and driver.
type SLO struct {
	SLO    string  `json:"slo"`
	For    string  `json:"for"`
	Count  float64 `json:"count"`
	P50    float64 `json:"p50Seconds"`
	P99    float64 `json:"p99Seconds"`
	Max    float64 `json:"maxSeconds"`
	Metric string  `json:"metric"`
}

// SLOReport is what `strait show slo -o json|yaml` prints.
type SLOReport struct {
	Prometheus string         `json:"prometheus"`
	Window     string         `json:"window"`
	SLOs       []SLO          `json:"slos"`
	Firing     []alerts.Alert `json:"firing"`
}

type sloOptions struct {
	prometheus string
	window     time.Duration
	// show's: its -o/--output.
	show *showOptions
}

// newSLOCommand is `strait show slo`; of show's flags it takes -o/--output.
func newSLOCommand(show *showOptions) *cobra.Command {
	o := &sloOptions{show: show}
	cmd := &cobra.Command{
		Use:   "slo --prometheus URL",
		Short: "Show the cross-cluster SLOs (propagation, failover, DNS) and the alerts firing, from Prometheus",
		Long: `slo reads, from a Prometheus that holds every member's series (the hub's, which
federates the members' as docs/observability.md sets it up), the SLO histograms over
--window and prints, per ClusterSet, member or member and cable driver, their 50th and
99th percentiles, the slowest bucket, and how many observations there were:

  ClusterSet into every member  from the hub seeing a new generation to every member holding it
  export into every member      from the hub seeing an export to every member importing it
  change into DNS answers       in each member, from a change's watch event to strait dns serving it
  failover                      from the old gateway's term ending to every peer answering through the new one
  DNS answer                    from a question's arrival to its answer

then every one of Strait's alerts firing, with what it is about and its runbook. Each
part is measured on one clock; how they add up is in docs/observability.md. Percentiles
are estimated from the histograms' buckets, as histogram_quantile does.

Exit status: 0 nothing firing, 1 an alert firing, 2 Prometheus could not be read.`,
		Example: `  # Through a port-forward to the hub's Prometheus:
  kubectl -n monitoring port-forward svc/prometheus 9090 &
  strait show slo --prometheus http://127.0.0.1:9090

  # The last day, as JSON:
  strait show slo --prometheus http://127.0.0.1:9090 --window 24h -o json | jq '.slos[] | select(.slo == "failover")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSLO(cli.Context(cmd), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.prometheus, "prometheus", "", "URL of a Prometheus with every member's series (the hub's)")
	f.DurationVar(&o.window, "window", time.Hour, "how far back the percentiles and counts reach")
	_ = cmd.MarkFlagRequired("prometheus")
	return cmd
}

func runSLO(ctx context.Context, o *sloOptions, stdout, stderr io.Writer) error {
	if err := checkOutput(o.show.output); err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	if o.window < time.Minute {
		return &cli.ExitStatus{Code: exitError, Err: fmt.Errorf("--window %s: want a minute or more", o.window)}
	}
	c, err := promapi.NewClient(promapi.Config{Address: o.prometheus})
	if err != nil {
		return &cli.ExitStatus{Code: exitError, Err: fmt.Errorf("--prometheus %q: %w", o.prometheus, err)}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := readSLOs(ctx, promv1.NewAPI(c), o.window)
	if err != nil {
		return &cli.ExitStatus{Code: exitError, Err: fmt.Errorf("prometheus %s: %w", o.prometheus, err)}
	}
	r.Prometheus = o.prometheus
	if err := printSLOs(stdout, r, o.show.output); err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	if len(r.Firing) > 0 {
		fmt.Fprintf(stderr, "warning: %d of Strait's alerts firing\n", len(r.Firing))
		return &cli.ExitStatus{Code: exitFindings}
	}
	return nil
}

// readSLOs queries every SLO and the alerts firing.
func readSLOs(ctx context.Context, api promv1.API, window time.Duration) (*SLOReport, error) {
	r := &SLOReport{Window: model.Duration(window).String()}
	w := r.Window
	for _, q := range sloQueries {
		rows := map[string]*SLO{}
		get := func(query string, set func(*SLO, float64)) error {
			v, _, _, err := api.Query(ctx, query, time.Now())
			if err != nil {
				return fmt.Errorf("%s: %w", query, err)
			}
			vec, _ := v.(model.Vector)
			for _, s := range vec {
				key := rowKey(s.Metric, q.by)
				if rows[key] == nil {
					rows[key] = &SLO{SLO: q.name, For: key, Metric: q.family}
				}
				set(rows[key], float64(s.Value))
			}
			return nil
		}
		buckets := fmt.Sprintf("sum by (le, %s) (increase(%s_bucket[%s]))", q.by, q.family, w)
		for _, part := range []struct {
			query string
			set   func(*SLO, float64)
		}{
			{fmt.Sprintf("sum by (%s) (increase(%s_count[%s])) > 0", q.by, q.family, w), func(s *SLO, v float64) { s.Count = math.Round(v) }},
			{fmt.Sprintf("histogram_quantile(0.5, %s)", buckets), func(s *SLO, v float64) { s.P50 = v }},
			{fmt.Sprintf("histogram_quantile(0.99, %s)", buckets), func(s *SLO, v float64) { s.P99 = v }},
			{fmt.Sprintf("histogram_quantile(1, %s)", buckets), func(s *SLO, v float64) { s.Max = v }},
		} {
			if err := get(part.query, part.set); err != nil {
				return nil, err
			}
		}
		for _, row := range rows {
			if row.Count > 0 {
				r.SLOs = append(r.SLOs, *row)
			}
		}
	}
	slices.SortStableFunc(r.SLOs, func(a, b SLO) int {
		return strings.Compare(a.SLO+"\x00"+a.For, b.SLO+"\x00"+b.For)
	})
	firing, err := alerts.Firing(ctx, api)
	if err != nil {
		return nil, err
	}
	r.Firing = firing
	return r, nil
}

// rowKey is the values of the labels by (comma-separated names) of m, "/"-joined.
func rowKey(m model.Metric, by string) string {
	var parts []string
	for _, l := range strings.Split(by, ",") {
		v := string(m[model.LabelName(strings.TrimSpace(l))])
		if v == "" {
			v = "-"
		}
		parts = append(parts, v)
	}
	return strings.Join(parts, "/")
}

// printSLOs writes r as tables, or as JSON or YAML.
func printSLOs(w io.Writer, r *SLOReport, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "yaml":
		out, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "SLO (last %s)\tFOR\tCOUNT\tP50\tP99\tMAX\n", r.Window)
	for _, s := range r.SLOs {
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%s\t%s\t%s\n", s.SLO, s.For, s.Count, seconds(s.P50), seconds(s.P99), seconds(s.Max))
	}
	if len(r.SLOs) == 0 {
		fmt.Fprintf(tw, "(nothing timed in the last %s)\t\t\t\t\t\n", r.Window)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if len(r.Firing) == 0 {
		fmt.Fprintln(w, "No alert of Strait's firing.")
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIRING\tIN\tSEVERITY\tABOUT\tRUNBOOK")
	for _, a := range r.Firing {
		in := a.Cluster
		if in == "" {
			in = "(this Prometheus)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Name, in, a.Severity, a.About, a.Runbook)
	}
	return tw.Flush()
}

// seconds is a percentile as a person reads it: milliseconds under a second; "-" when
// the buckets give none (NaN).
func seconds(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v < 1:
		return fmt.Sprintf("%.0fms", v*1000)
	}
	return fmt.Sprintf("%.2fs", v)
}
