package diagnose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/plan"
)

// Exit statuses a script can test.
const (
	exitWarn  = 1 // a check warned, none failed
	exitFail  = 2 // a check failed
	exitError = 3 // diagnose could not run: a bad flag, no member reachable
)

type options struct {
	members  memberFlags
	file     string
	output   string
	timeouts timeouts
	// prometheus, when set, adds a line for each of Strait's alerts firing there.
	prometheus string
}

// NewCommand is `strait diagnose`.
func NewCommand() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "diagnose [all|" + strings.Join(checkNames, "|") + "]...",
		Short: "Look for what breaks traffic between the members: one pass/warn/fail line per check, and what to do",
		Long: `diagnose checks every member it is given, with your own credentials for each (the
contexts of a kubeconfig, or --member-kubeconfig NAME=FILE), and prints one line per
check and member, pass, warn or fail, and for each warning or failure what to do:

  k8s-version  the API server's version, 1.33 or later (the ServiceCIDR API)
  kube-proxy   kube-proxy's mode and masquerade bit on every node, read from its metrics
               endpoint on the node (through the agent's container)
  cni          from a probe pod on every node to another member's probe pod: the source
               address that arrives must be the pod's own, not a masquerading node's
  mtu          a don't-fragment datagram of the path MTU through the cable must cross
  firewall     the cable port between the active gateways, judged from the tunnel's
               handshake and the health checks through it (no second listener)
  connections  one active gateway, every Peer Connected, pod → pod across
  deployment   an agent running and ready on every node, strait dns ready, one build
  dns          the strait-dns block in CoreDNS's Corefile, and every imported
               service's clusterset.local name answered from a pod
  cidrs        the nodes' pod CIDRs, the pods' IPs and the ServiceCIDR API's service CIDR
               inside the ClusterSet's (the file given with -f, else the Membership the
               hub wrote from the ClusterSet)

With --prometheus URL (the hub's Prometheus, which federates the members'), an "alerts"
line follows for each of Strait's alerts firing there, in the cluster it fires in: fail
for a critical one, warn for the others, each naming its runbook in docs/runbooks.md.

The probes run Strait's own image (the agent's), "straitd probe", in pods diagnose
starts in strait-system on every node and removes before it ends. Nothing else is written.

Every exec, log read and probe pod goes through a node's kubelet, and has a deadline: a
node whose kubelet does not take an exec up or a pod within --node-timeout (10s), that
is not Ready, or whose probe pod does not run within --pod-start-timeout (30s) after, is
a failed "nodes" line naming it and what to do, printed first; nothing more is asked of
it, and the other checks run without it. With a hung node, diagnose all ends within a
minute.

Exit status: 0 every check passed, 1 a warning and no failure, 2 a check failed (a
"nodes" line among them), 3 diagnose could not run (a bad flag, a member that could not
be read).`,
		Example: `  # Every check, every context of the current kubeconfig that is a member:
  strait diagnose

  # The deployment checks, and the alerts the hub's Prometheus has firing:
  strait diagnose deployment --prometheus http://127.0.0.1:9090

  # Two members of one kubeconfig, the CIDRs against the file in git (before a commit):
  strait diagnose cidrs --context c1 --context c2 -f clusterset/clusterset.yaml

  # A kubeconfig file per member:
  strait diagnose all --member-kubeconfig c1=c1.kubeconfig --member-kubeconfig c2=c2.kubeconfig

  # In a script: what failed, with jq.
  strait diagnose -o json | jq -r '.results[] | select(.status == "fail") | "\(.cluster) \(.check): \(.fix)"'`,
		ValidArgs: append([]string{"all"}, checkNames...),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cli.Context(cmd), o, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	addMemberFlags(cmd, &o.members)
	addTimeoutFlags(cmd, &o.timeouts, true, missedNodesLine)
	f.StringVarP(&o.file, "file", "f", "", "check the CIDRs against this ClusterSet file (default: each member's Membership)")
	f.StringVar(&o.prometheus, "prometheus", "", "also list Strait's alerts firing in this Prometheus (the hub's, which federates the members'), each with its runbook")
	f.StringVarP(&o.output, "output", "o", "", "output format: json or yaml (default: a table)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.ExitStatus{Code: exitError, Err: err} })
	return cmd
}

// Report is what -o json|yaml prints.
type Report struct {
	Results []Result `json:"results"`
	// Unreadable are the members (or contexts) that could not be read.
	Unreadable []string `json:"unreadable,omitempty"`
	// Skipped are contexts without a Strait Membership: not members.
	Skipped []string `json:"skipped,omitempty"`
}

// checksOf turns the arguments into the checks to run, in their order.
func checksOf(args []string) ([]string, error) {
	if len(args) == 0 {
		return checkNames, nil
	}
	want := map[string]bool{}
	for _, a := range args {
		if a == "all" {
			return checkNames, nil
		}
		if !contains(checkNames, a) {
			return nil, fmt.Errorf("no check %q: want all or %s", a, strings.Join(checkNames, ", "))
		}
		want[a] = true
	}
	var out []string
	for _, c := range checkNames {
		if want[c] {
			out = append(out, c)
		}
	}
	return out, nil
}

func needs(checks []string, any ...string) bool {
	for _, c := range any {
		if contains(checks, c) {
			return true
		}
	}
	return false
}

func run(ctx context.Context, o *options, args []string, stdout, stderr io.Writer) error {
	checks, err := checksOf(args)
	if err == nil && o.output != "" && o.output != "json" && o.output != "yaml" {
		err = fmt.Errorf("-o/--output %q: want json or yaml (or nothing, for a table)", o.output)
	}
	if err == nil {
		err = o.timeouts.validate()
	}
	if err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	targets, err := o.members.targets()
	if err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	progress := cli.Progress(stderr)
	rep := &Report{}
	progress("reading %d clusters", len(targets))
	members := readMembers(ctx, targets, o.timeouts, rep)
	if len(members) == 0 {
		printSide(stderr, rep)
		return &cli.ExitStatus{Code: exitError, Err: errors.New("no member to diagnose")}
	}
	if err := diagnoseMembers(ctx, members, checks, o, rep, progress); err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	if o.prometheus != "" {
		progress("reading the alerts firing in %s", o.prometheus)
		lines, err := alertResults(ctx, o.prometheus)
		if err != nil {
			rep.Unreadable = append(rep.Unreadable, err.Error())
		}
		rep.Results = append(rep.Results, lines...)
	}
	if err := printReport(stdout, rep, o.output); err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	printSide(stderr, rep)
	return exitOf(rep)
}

// diagnoseMembers runs the checks over the members read and puts the results into rep:
// first a "nodes" line for each member with a node that did not answer, then the checks.
// An error only when diagnose cannot run (the file given cannot be read).
func diagnoseMembers(ctx context.Context, members []*member, checks []string, o *options, rep *Report, progress func(string, ...any)) error {
	obs := observed{members: members, probes: map[string][]probePod{}, lookups: map[string][]lookup{}, now: time.Now()}
	if err := o.expected(&obs); err != nil {
		return err
	}
	if needs(checks, checkKubeProxy, checkCNI, checkFirewall) {
		progress("reading every node's facts in its agent (straitd probe node), each node within %s", o.timeouts.node)
		readFacts(ctx, obs.members)
	}
	if needs(checks, checkCNI, checkMTU, checkConnections, checkDNS) {
		if err := probeAcross(ctx, &obs, contains(checks, checkMTU), progress); err != nil {
			rep.Unreadable = append(rep.Unreadable, err.Error())
		}
	}
	rep.Results = append(nodeResults(obs.members, o.timeouts), judge(obs, checks)...)
	return nil
}

// expected are the CIDRs to compare with: the file's, or each Membership's.
func (o *options) expected(obs *observed) error {
	obs.expected = map[string]cidrs{}
	if o.file == "" {
		obs.source = "the Membership"
		for _, m := range obs.members {
			obs.expected[m.name] = cidrs{m.membership.Spec.PodCIDRs, m.membership.Spec.ServiceCIDRs}
		}
		return nil
	}
	data, err := os.ReadFile(o.file)
	if err != nil {
		return err
	}
	cs, err := plan.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", o.file, err)
	}
	obs.source = o.file
	for _, c := range cs.Spec.Clusters {
		obs.expected[c.Name] = cidrs{c.PodCIDRs, c.ServiceCIDRs}
	}
	return nil
}

// probeAcross starts the probe pods in every member, dials across, looks names up, and
// removes the pods.
func probeAcross(ctx context.Context, obs *observed, measureMTU bool, progress func(string, ...any)) error {
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	var errs []error
	progress("starting probe pods (straitd probe serve) on every node that answers")
	started := map[*member]bool{}
	for _, m := range obs.members {
		if err := m.startProbes(ctx, run); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.name, err))
			continue
		}
		started[m] = true
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		defer cancel()
		for _, m := range obs.members {
			_ = m.stopProbes(cctx, run)
		}
	}()
	for _, m := range obs.members {
		if !started[m] {
			continue
		}
		pods, err := m.waitProbes(ctx, run)
		if err != nil {
			errs = append(errs, err)
		}
		obs.probes[m.name] = pods
	}
	progress("probing across: pod → pod, the source address that arrives, the path MTU, clusterset.local")
	for _, m := range obs.members {
		obs.across = append(obs.across, dialAcross(ctx, m, obs.probes[m.name], obs.probes, obs.members, measureMTU)...)
		obs.lookups[m.name] = lookups(ctx, m, obs.probes[m.name])
	}
	readArrivals(ctx, obs)
	to := map[string][]string{}
	for _, a := range obs.across {
		to[a.from] = appendNew(to[a.from], a.toPod.ip)
	}
	readFlows(ctx, obs.members, to)
	return errors.Join(errs...)
}

func exitOf(rep *Report) error {
	worst := 0
	for _, r := range rep.Results {
		switch r.Status {
		case Fail:
			worst = max(worst, exitFail)
		case Warn:
			worst = max(worst, exitWarn)
		}
	}
	if len(rep.Unreadable) > 0 {
		worst = exitError
	}
	if worst == 0 {
		return nil
	}
	return &cli.ExitStatus{Code: worst}
}

func printReport(w io.Writer, rep *Report, format string) error {
	if format == "json" || format == "yaml" {
		return cli.PrintJSONOrYAML(w, rep, format)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tCLUSTER\tRESULT\tDETAIL")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Check, r.Cluster, r.Status, r.Detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	first := true
	for _, r := range rep.Results {
		if r.Fix == "" {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nWHAT TO DO")
			first = false
		}
		fmt.Fprintf(w, "%s %s (%s): %s\n", r.Check, r.Cluster, r.Status, r.Fix)
	}
	return nil
}

// printSide prints the contexts skipped and the members that could not be read.
func printSide(w io.Writer, rep *Report) {
	for _, s := range rep.Skipped {
		fmt.Fprintln(w, "skipped:", s)
	}
	for _, u := range rep.Unreadable {
		fmt.Fprintln(w, "error:", u)
	}
}
