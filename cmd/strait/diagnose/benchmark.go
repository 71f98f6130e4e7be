package diagnose

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/probe"
)

// What strait benchmark measures.
const (
	benchThroughput = "throughput"
	benchLatency    = "latency"
)

type benchmarkOptions struct {
	members  memberFlags
	intra    bool
	span     time.Duration
	count    int
	output   string
	timeouts timeouts
}

// NewBenchmarkCommand is `strait benchmark`.
func NewBenchmarkCommand() *cobra.Command {
	o := &benchmarkOptions{span: 5 * time.Second, count: 200}
	cmd := &cobra.Command{
		Use:   "benchmark throughput|latency [--intra-cluster]",
		Short: "Measure TCP throughput or latency pod → pod between two members, against the baseline inside one",
		Long: `benchmark measures, with your own credentials for each member (the contexts of a
kubeconfig, or --member-kubeconfig NAME=FILE), between two probe pods of Strait's own
image (straitd probe serve, on every node of the members, removed at the end):

  throughput  one TCP connection sending as fast as it can for --for (5s); the figure is
              what the receiving pod got, between its first and its last byte
  latency     --count (200) round trips of 64-byte messages on one TCP connection: the
              minimum, average, median, 99th percentile and maximum

from a pod of the first member (on a plain node when it has one: its traffic takes the
way to the active gateway, as most pods' does) to a pod of the second member, and as the
baseline between two nodes inside the first member; then the ratio, across ÷ inside (for
latency, of the average round trip). With --intra-cluster only the baseline is measured.

The pods run the agent's image, which every node holds; nothing else is written. A node
whose kubelet does not take its probe pod or an exec up within --node-timeout, or whose
probe pod does not run within --pod-start-timeout, is named on standard error and left
out; the pods are picked among the others.

Exit status: 0 measured, 3 an error (a bad flag, a member that could not be read, a
measurement that failed).`,
		Example: `  # Throughput from c1 to c2 and inside c1, and the ratio:
  strait benchmark throughput --context c1 --context c2

  # Latency with a kubeconfig file per member:
  strait benchmark latency --member-kubeconfig c1=c1.kubeconfig --member-kubeconfig c2=c2.kubeconfig

  # The baseline inside one cluster:
  strait benchmark throughput --intra-cluster --context c1

  # In a script: the ratio.
  strait benchmark throughput --context c1 --context c2 -o json | jq .ratio`,
		ValidArgs: []string{benchThroughput, benchLatency},
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBenchmark(cli.Context(cmd), o, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	addMemberFlags(cmd, &o.members)
	addTimeoutFlags(cmd, &o.timeouts, true, missedLeftOut)
	f := cmd.Flags()
	f.BoolVar(&o.intra, "intra-cluster", false, "only the baseline: between two nodes of the first member")
	f.DurationVar(&o.span, "for", o.span, "throughput: how long to send")
	f.IntVar(&o.count, "count", o.count, "latency: how many round trips")
	f.StringVarP(&o.output, "output", "o", "", "output format: json or yaml (default: a table)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.ExitStatus{Code: exitError, Err: err} })
	return cmd
}

// BenchmarkReport is what -o json|yaml prints.
type BenchmarkReport struct {
	Measure string     `json:"measure"`
	Runs    []BenchRun `json:"runs"`
	// Ratio is across ÷ inside: of the throughputs' bits per second, of the latencies'
	// average round trips; absent with --intra-cluster.
	Ratio float64 `json:"ratio,omitempty"`
}

// BenchRun is one measurement between two probe pods.
type BenchRun struct {
	// Between is "c1 → c2" across, or "inside c1".
	Between    string            `json:"between"`
	Across     bool              `json:"across"`
	From       string            `json:"from"` // member/node pod-IP
	To         string            `json:"to"`
	Throughput *probe.Throughput `json:"throughput,omitempty"`
	Latency    *probe.Latency    `json:"latency,omitempty"`
}

func runBenchmark(ctx context.Context, o *benchmarkOptions, measure string, stdout, stderr io.Writer) error {
	fail := func(err error) error { return &cli.ExitStatus{Code: exitError, Err: err} }
	if o.output != "" && o.output != "json" && o.output != "yaml" {
		return fail(fmt.Errorf("-o/--output %q: want json or yaml (or nothing, for a table)", o.output))
	}
	if o.span < time.Second || o.count < 1 {
		return fail(fmt.Errorf("--for %s, --count %d: want at least 1s and 1", o.span, o.count))
	}
	if err := o.timeouts.validate(); err != nil {
		return fail(err)
	}
	targets, err := o.members.targets()
	if err != nil {
		return fail(err)
	}
	progress := cli.Progress(stderr)
	want := 2
	if o.intra {
		want = 1
	}
	var members []*member
	for _, t := range targets {
		if len(members) == want {
			break
		}
		m := connect(t, o.timeouts)
		if m.err == nil {
			m.read(ctx)
		}
		switch {
		case m.err != nil:
			return fail(fmt.Errorf("%s (%s): %w", t.name, t.from, m.err))
		case m.membership != nil:
			members = append(members, m)
		}
	}
	if len(members) < want {
		return fail(fmt.Errorf("benchmark needs %d members that can be read; found %d", want, len(members)))
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	progress("starting probe pods in %s", memberNames(members))
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		for _, m := range members {
			_ = m.stopProbes(cctx, run)
		}
	}()
	pods := map[*member][]probePod{}
	for _, m := range members {
		if err := m.startProbes(ctx, run); err != nil {
			return fail(fmt.Errorf("%s: %w", m.name, err))
		}
	}
	for _, m := range members {
		if pods[m], err = m.waitProbes(ctx, run); err != nil {
			return fail(err)
		}
		for _, n := range m.failedNodes() {
			fmt.Fprintf(stderr, "warning: %s: %v: left out\n", m.name, m.nodeError(n))
		}
		if len(pods[m]) == 0 {
			return fail(fmt.Errorf("no probe pod of %s runs: %s", m.name, hungNodeFix(m.failedNodes(), o.timeouts, true)))
		}
	}
	a := members[0]
	from := pickPlain(pods[a])
	inside, ok := otherNode(pods[a], from)
	if !ok {
		return fail(fmt.Errorf("%s has one node: the baseline inside it needs two", a.name))
	}
	type pair struct {
		between  string
		across   bool
		to       probePod
		toMember *member
	}
	var pairs []pair
	if !o.intra {
		b := members[1]
		pairs = append(pairs, pair{between: a.name + " → " + b.name, across: true, to: pickPlain(pods[b]), toMember: b})
	}
	pairs = append(pairs, pair{between: "inside " + a.name, to: inside, toMember: a})
	rep := &BenchmarkReport{Measure: measure}
	for _, p := range pairs {
		r := BenchRun{Between: p.between, Across: p.across, From: a.name + "/" + from.node + " " + from.ip, To: p.toMember.name + "/" + p.to.node + " " + p.to.ip}
		addr := net.JoinHostPort(p.to.ip, strconv.Itoa(probe.BenchPort))
		progress("%s %s: %s → %s", measure, p.between, r.From, r.To)
		var err error
		if measure == benchThroughput {
			r.Throughput = &probe.Throughput{}
			// Its own bound: a connection of 3 s, --for of sending, the receiver's answer within 33 s.
			err = a.execJSON(ctx, from.node, from.name, "probe", []string{"/straitd", "probe", "throughput", "--for", o.span.String(), addr}, o.span+36*time.Second, r.Throughput)
		} else {
			r.Latency = &probe.Latency{}
			// Its own bound: a connection of 3 s, then each round trip within 3 s.
			err = a.execJSON(ctx, from.node, from.name, "probe", []string{"/straitd", "probe", "latency", "--count", strconv.Itoa(o.count), addr}, time.Duration(o.count+1)*3*time.Second, r.Latency)
		}
		if err != nil {
			return fail(fmt.Errorf("%s %s: %w", measure, p.between, err))
		}
		rep.Runs = append(rep.Runs, r)
	}
	rep.Ratio = ratio(rep)
	if o.output != "" {
		return cli.PrintJSONOrYAML(stdout, rep, o.output)
	}
	return printBenchTable(stdout, rep)
}

// otherNode is a probe pod on another node than from's.
func otherNode(pods []probePod, from probePod) (probePod, bool) {
	for _, p := range pods {
		if p.node != from.node {
			return p, true
		}
	}
	return probePod{}, false
}

// ratio is across ÷ inside, 0 when either is missing or zero.
func ratio(rep *BenchmarkReport) float64 {
	var across, inside float64
	for _, r := range rep.Runs {
		v := 0.0
		switch {
		case r.Throughput != nil:
			v = r.Throughput.BitsPerSecond
		case r.Latency != nil:
			v = r.Latency.Avg
		}
		if r.Across {
			across = v
		} else {
			inside = v
		}
	}
	if across == 0 || inside == 0 {
		return 0
	}
	return across / inside
}

func memberNames(ms []*member) string {
	var names []string
	for _, m := range ms {
		names = append(names, m.name)
	}
	return strings.Join(names, ", ")
}

// bitRate is a rate for people: 812.4 Mbit/s, 2.31 Gbit/s.
func bitRate(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%.2f Gbit/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.1f Mbit/s", bps/1e6)
	default:
		return fmt.Sprintf("%.1f kbit/s", bps/1e3)
	}
}

func ms(micros float64) string { return fmt.Sprintf("%.3f ms", micros/1e3) }

func printBenchTable(w io.Writer, rep *BenchmarkReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if rep.Measure == benchThroughput {
		fmt.Fprintln(tw, "BETWEEN\tFROM\tTO\tTHROUGHPUT\tSENT")
		for _, r := range rep.Runs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f MB in %.2fs\n", r.Between, r.From, r.To, bitRate(r.Throughput.BitsPerSecond), float64(r.Throughput.Bytes)/1e6, r.Throughput.Seconds)
		}
	} else {
		fmt.Fprintln(tw, "BETWEEN\tFROM\tTO\tAVG\tMIN\tP50\tP99\tMAX\tROUND TRIPS")
		for _, r := range rep.Runs {
			l := r.Latency
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", r.Between, r.From, r.To, ms(l.Avg), ms(l.Min), ms(l.P50), ms(l.P99), ms(l.Max), l.Count)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.Ratio == 0 {
		return nil
	}
	what := "throughput"
	if rep.Measure == benchLatency {
		what = "average round trip"
	}
	_, err := fmt.Fprintf(w, "ratio across ÷ inside (%s): %.2f\n", what, rep.Ratio)
	return err
}
