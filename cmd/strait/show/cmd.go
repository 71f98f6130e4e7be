package show

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
)

// Exit statuses of show and version, as strait diff's: 0 all is well, 1 something to
// look at (each finding a "warning:" line), 2 an error (a member or the hub that could
// not be read, a bad flag).
const (
	exitFindings = 1
	exitError    = 2
)

type showOptions struct {
	hub      hubFlags
	output   string
	clusters []string
}

func (o *showOptions) addFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&o.hub.kubeconfig, "kubeconfig", "", "the hub's kubeconfig (default: KUBECONFIG, ~/.kube/config)")
	f.StringVar(&o.hub.context, "context", "", "the kubeconfig context of the hub (default: the current one)")
	f.StringVar(&o.hub.clusterSet, "clusterset", "", "NAMESPACE/NAME of the ClusterSet (default: the hub's only one)")
	f.StringVarP(&o.output, "output", "o", "", "output format: json or yaml (default: tables)")
	f.StringSliceVar(&o.clusters, "cluster", nil, "only these members (repeatable, or comma-separated)")
	_ = cmd.RegisterFlagCompletionFunc("cluster", o.completeClusters)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
}

// completeClusters offers the ClusterSet's cluster names, read from the hub.
func (o *showOptions) completeClusters(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cli.Context(cmd), 5*time.Second)
	defer cancel()
	names, err := clusterNamesFromHub(ctx, o.hub)
	if err != nil {
		cobra.CompDebugln(err.Error(), true)
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// NewShowCommand is `strait show`.
func NewShowCommand() *cobra.Command {
	o := &showOptions{}
	cmd := &cobra.Command{
		Use:   "show connections|gateways|endpoints|networks|exports|imports|versions|all|slo",
		Short: "Show what the clusterset is doing, per member: connections, gateways, networks, exports, imports, versions",
		Long: `show reads the hub's ClusterSet and, through the kubeconfig Secrets it names there (the
hub's own member credentials), every member's Peers, Gateways, Membership,
ServiceExports and ServiceImports, and prints one view of them. It needs only the hub's kubeconfig, and
reads nothing in a member the hub may not already read. It writes nothing.

  connections  each member's tunnel to every other: the local gateway reporting it, the
               remote gateway and its endpoint, state, latency and loss of the last
               health-check round, last handshake, bytes received and sent
  gateways     every gateway-capable node: active or passive, endpoint, driver, Ready,
               last heartbeat
  endpoints    each member's active gateway, where the other members' cables go
  networks     pod and service CIDRs, global CIDR and egress IPs (globalnet)
  exports      every ServiceExport with its Valid, Ready and Conflict conditions
  imports      every ServiceImport: its type, IP families (A for IPv4, AAAA for IPv6),
               clusterset IPs one a family, and the clusters exporting it
  versions     the hub's and every agent's and strait dns's build, and this strait's
  all          all of them
  slo          (from Prometheus, --prometheus URL) the cross-cluster SLOs' percentiles
               and the alerts firing, with their runbooks

Output: aligned tables, or -o json|yaml for scripts. What should be looked at (a
connection that is not Connected, a member without an active gateway, an export that is
not ready or in conflict, an import listing a family it has no clusterset IP of, a daemon of another build than this strait) is printed as a
"warning:" line on standard error. Exit status: 0 all is well, 1 warnings, 2 an error (the
hub, or a member, could not be read; the views of the others are printed).`,
		Example: `  # Everything, from the hub of the current kubeconfig context:
  strait show all

  # The tunnels of c1 only, with a hub kubeconfig of its own:
  strait show connections --cluster c1 --kubeconfig hub.kubeconfig

  # In a script: fail unless every connection is up.
  strait show connections >/dev/null 2>&1 || echo "a connection is down"

  # The states, with jq:
  strait show connections -o json | jq -r '.connections[] | "\(.cluster) -> \(.peer): \(.state)"'`,
		Args:      cobra.NoArgs,
		ValidArgs: viewNames,
	}
	o.addFlags(cmd)
	for _, v := range viewNames {
		sub := &cobra.Command{
			Use:   v,
			Short: "Show " + viewShort(v),
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runShow(cli.Context(cmd), o, expand(v), cmd.OutOrStdout(), cmd.ErrOrStderr())
			},
		}
		cmd.AddCommand(sub)
	}
	cmd.AddCommand(newSLOCommand(o))
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.ExitStatus{Code: exitError, Err: err} })
	return cmd
}

func viewShort(v string) string {
	return map[string]string{
		viewConnections: "each member's tunnels to the others: state, latency, loss, handshake, bytes",
		viewGateways:    "every gateway-capable node: active or passive, endpoint, Ready, heartbeat",
		viewEndpoints:   "each member's active gateway and the endpoint the other members' cables reach",
		viewNetworks:    "each member's pod and service CIDRs, global CIDR and egress IPs",
		viewExports:     "every ServiceExport with its Valid, Ready and Conflict conditions",
		viewImports:     "every ServiceImport in each member: its type, IP families, clusterset IPs and exporting clusters",
		viewVersions:    "the build of the hub, every agent and strait dns, and of this strait",
		viewAll:         "every view",
	}[v]
}

func checkOutput(format string) error {
	if format != "" && format != "json" && format != "yaml" {
		return fmt.Errorf("-o/--output %q: want json or yaml (or nothing, for tables)", format)
	}
	return nil
}

func runShow(ctx context.Context, o *showOptions, views []string, stdout, stderr io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	st, err := read(ctx, o.hub, o.clusters)
	if err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	b := cli.Version()
	r := report(st, views, straitv1.Build{Version: b.Version, Revision: b.Revision})
	if err := printReport(stdout, r, views, o.output, time.Now()); err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	printProblems(stderr, r)
	return exitOf(r)
}

func exitOf(r *Report) error {
	switch {
	case len(r.Unreadable) > 0:
		return &cli.ExitStatus{Code: exitError}
	case len(r.Findings) > 0:
		return &cli.ExitStatus{Code: exitFindings}
	}
	return nil
}

// clusterNamesFromHub are the ClusterSet's cluster names, for completion.
func clusterNamesFromHub(ctx context.Context, f hubFlags) ([]string, error) {
	hub, err := hubClient(f)
	if err != nil {
		return nil, err
	}
	cs, err := readClusterSet(ctx, hub, f.clusterSet)
	if err != nil {
		return nil, err
	}
	return clusterNames(cs), nil
}

type versionOptions struct {
	showOptions
	clientOnly bool
}

// NewVersionCommand is `strait version`: this strait's build, and every running
// daemon's as `strait show versions` reads them.
func NewVersionCommand() *cobra.Command {
	o := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version [--client]",
		Short: "Print the build of this strait and of every running daemon (hub, agents, strait dns)",
		Long: `version prints this strait's version, commit and Go release, then the build every
running daemon reports: the hub (in its ClusterSet's status.hub) and every agent and
strait dns of every member (in the member's Membership status.daemons, which each daemon
writes for itself). It reads them with the hub's kubeconfig alone, as strait show does;
--client prints only this strait's.

A daemon of another version or commit than this strait is a "warning:" line on standard
error and exit status 1; 2 when the hub or a member could not be read.`,
		Example: `  strait version
  strait version --client
  strait version --kubeconfig hub.kubeconfig -o json | jq -r '.versions[] | "\(.cluster) \(.daemon) \(.revision)"'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVersion(cli.Context(cmd), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.addFlags(cmd)
	cmd.Flags().BoolVar(&o.clientOnly, "client", false, "print only this strait's build; read nothing")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cli.ExitStatus{Code: exitError, Err: err} })
	return cmd
}

func runVersion(ctx context.Context, o *versionOptions, stdout, stderr io.Writer) error {
	if err := checkOutput(o.output); err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	b := cli.Version()
	clientLine := fmt.Sprintf("strait %s (revision %s, %s)", b.Version, b.Revision, b.Go)
	if o.clientOnly {
		if o.output != "" {
			return printReport(stdout, &Report{Client: &Version{Cluster: "client", Daemon: "strait", Version: b.Version, Revision: b.Revision}}, nil, o.output, time.Now())
		}
		_, err := fmt.Fprintln(stdout, clientLine)
		return err
	}
	if o.output == "" {
		fmt.Fprintln(stdout, clientLine)
	}
	st, err := read(ctx, o.hub, o.clusters)
	if err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	views := []string{viewVersions}
	r := report(st, views, straitv1.Build{Version: b.Version, Revision: b.Revision})
	if o.output == "" {
		r.Client = nil // on the first line already
	}
	if err := printReport(stdout, r, views, o.output, time.Now()); err != nil {
		return &cli.ExitStatus{Code: exitError, Err: err}
	}
	printProblems(stderr, r)
	return exitOf(r)
}
