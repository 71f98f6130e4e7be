package join

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/plan/file"
)

// NewUnjoinCommand is `strait unjoin`.
func NewUnjoinCommand() *cobra.Command {
	o := &options{timeout: 3 * time.Minute}
	member := false
	cmd := &cobra.Command{
		Use:   "unjoin NAME [-f clusterset.yaml [--commit]] [--hub-kubeconfig HUB | --hub-context CTX] [--kubeconfig MEMBER]",
		Short: "Undo strait join: the ClusterSet entry (git first), then the hub's kubeconfig Secret and the member's token",
		Long: `unjoin undoes strait join, git first, each step for the flags given:

  1. -f: takes the cluster out of your ClusterSet file (its spec.clusters entry, and it
     from every export naming it; an export of it alone goes), prints the diff and with
     --commit commits it. Push it: the hub then removes what it wrote in the member.
  2. --hub-kubeconfig/--hub-context: refuses (exit 2) while a ClusterSet in the hub still
     names the cluster in spec.clusters (git still wants it); waits (--timeout) while the
     hub is still pruning it (it stays in status.clusters until it is clean: the hub
     needs the kubeconfig until then); then deletes the kubeconfig Secret in the hub.
  3. --kubeconfig/--context: deletes the member's token Secret
     strait-system/strait-hub-access-token; the token stops working (within the API
     server's 10 s token cache).

Run it with -f and --commit, push, then again with the hub's and the member's flags.
Strait stays installed in the member: strait uninstall --context MEMBER removes it.

Exit status: 0 done, 1 an error, 2 refused (the hub's ClusterSet still names the cluster).`,
		Example: `  # Take c3 out of the ClusterSet in git:
  strait unjoin c3 -f clusterset/clusterset.yaml --commit && git push

  # Once Flux applied it: the hub's Secret for c3 (after the hub pruned c3), c3's token:
  strait unjoin c3 --hub-context hub --kubeconfig c3.kubeconfig`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			member = cmd.Flags().Changed("kubeconfig") || cmd.Flags().Changed("context")
			return runUnjoin(cli.Context(cmd), o, member, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return file.Clusters(o.file), cobra.ShellCompDirectiveNoFileComp
		},
	}
	o.addFlags(cmd)
	cmd.Flags().DurationVar(&o.timeout, "timeout", o.timeout, "how long to wait for the hub to prune the cluster")
	return cmd
}

func runUnjoin(ctx context.Context, o *options, toMember bool, name string, stdout, stderr io.Writer) error {
	if err := o.check(name); err != nil {
		return err
	}
	if o.file == "" && !o.toHub() && !toMember {
		return fmt.Errorf("nothing to undo: give -f (the ClusterSet file), the hub (--hub-kubeconfig, --hub-context) or the member (--kubeconfig, --context)")
	}
	progress := cli.Progress(stderr)
	r := &Result{Cluster: name}
	if o.file != "" {
		if err := o.changeFile(r, func(data []byte) ([]byte, error) { return file.RemoveCluster(data, name) },
			"clusterset: unjoin "+name, progress); err != nil {
			return err
		}
	}
	if o.toHub() {
		done, err := o.unjoinHub(ctx, r, name, progress)
		if err != nil || !done {
			if err == nil && o.output != "" {
				err = cli.PrintJSONOrYAML(stdout, r, o.output)
			} else if err == nil {
				err = printUnjoin(stdout, r)
			}
			return err
		}
	}
	if toMember {
		m, err := connectMember(o.kubeconfig, o.context)
		if err != nil {
			return err
		}
		if r.TokenDeleted, err = m.deleteToken(ctx); err != nil {
			return fmt.Errorf("deleting the member's token Secret %s/%s: %w", straitv1.SystemNamespace, HubAccessToken, err)
		}
		r.TokenSecret = straitv1.SystemNamespace + "/" + HubAccessToken
		if r.TokenDeleted {
			progress("deleted the member's token Secret %s: the hub's token for %s no longer works", r.TokenSecret, name)
		} else {
			progress("the member has no token Secret %s", r.TokenSecret)
		}
		progress("Strait stays installed in %s: strait uninstall removes it", name)
	}
	if o.output != "" {
		return cli.PrintJSONOrYAML(stdout, r, o.output)
	}
	return printUnjoin(stdout, r)
}

// unjoinHub deletes the member's kubeconfig Secret in the hub once no ClusterSet wants
// the cluster and the hub has pruned it. done false: the file's change is not applied
// yet (said on stderr), so nothing after it may go.
func (o *options) unjoinHub(ctx context.Context, r *Result, name string, progress func(string, ...any)) (done bool, err error) {
	h, err := connectHub(o.hubKubeconfig, o.hubContext)
	if err != nil {
		return false, err
	}
	n, err := h.naming(ctx, name)
	if err != nil {
		return false, err
	}
	if len(n.inSpec) > 0 {
		what := fmt.Sprintf("ClusterSet %s in the hub still names %s in spec.clusters", strings.Join(n.inSpec, ", "), name)
		if r.Commit != "" || r.Diff != "" {
			progress("%s: push the change; once it is applied, run strait unjoin %s again without -f to delete the hub's Secret and the member's token", what, name)
			return false, nil
		}
		return false, exitError(exitRefused, fmt.Errorf("%s: take it out of git first (strait unjoin %s -f clusterset.yaml --commit, then push); the hub needs its kubeconfig until it has pruned the member", what, name))
	}
	if err := h.waitPruned(ctx, name, o.timeout, progress); err != nil {
		return false, err
	}
	namespace, secret, err := o.secretRef(name)
	if err != nil {
		return false, err
	}
	if n.secret != "" && o.secretName == "" {
		secret = n.secret
	}
	r.HubSecret = namespace + "/" + secret
	deleted, err := h.deleteSecret(ctx, namespace, secret)
	if err != nil {
		return false, err
	}
	if deleted {
		r.HubSecretWritten = "deleted"
		progress("deleted Secret %s in the hub", r.HubSecret)
	} else {
		progress("the hub has no Secret %s", r.HubSecret)
	}
	return true, nil
}

func printUnjoin(w io.Writer, r *Result) error {
	if r.Diff != "" {
		if _, err := io.WriteString(w, r.Diff); err != nil {
			return err
		}
	}
	if r.Commit != "" {
		if _, err := fmt.Fprintf(w, "committed %s\n", r.Commit); err != nil {
			return err
		}
	}
	return nil
}
