package export

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/straitnet/strait/internal/udiff"
	"github.com/straitnet/strait/plan/file"
)

type options struct {
	file     string
	clusters []string
	commit   bool
	message  string
}

// NewExportCommand is `strait export`.
func NewExportCommand() *cobra.Command { return newCommand(true) }

// NewUnexportCommand is `strait unexport`.
func NewUnexportCommand() *cobra.Command { return newCommand(false) }

func newCommand(export bool) *cobra.Command {
	o := &options{}
	verb, long, example := "export", `export adds a service to the exports of a ClusterSet file in your working tree: from
every cluster that has it, or with --clusters from those alone (added to the clusters
it is exported from already). Comments, order, quoting and indentation of the file stay
as they were; only the export's lines change.

The result is checked with the validator strait render, the webhook and the hub run, and
refused with one line per problem naming the field, the value and what is wrong; the
file is then left as it was. The change is printed as a unified diff. With --commit it is
committed with git (that file alone); push it, and Flux or Argo CD applies it. Nothing is
written to any cluster.

A service that is exported as asked already changes nothing; that is said on standard
error and the exit status is 0. Errors exit with status 1.`, `  # Export sample/whereami from c2 and c3, and commit:
  strait export sample/whereami --clusters c2,c3 -f clusterset.yaml --commit

  # From every member that has the service:
  strait export sample/whereami -f clusterset.yaml

  # See the change, then push it:
  strait export shop/cart -f clusterset.yaml --commit -m "shop: cart for everyone" && git push`
	if !export {
		verb, long, example = "unexport", `unexport removes a service from the exports of a ClusterSet file in your working tree:
the whole export, or with --clusters only those clusters' part (an export of every
cluster becomes the list of the others; one left with no cluster goes). Comments,
order, quoting and indentation of the file stay as they were.

As strait export, the result is validated as strait render validates, the diff printed,
and --commit commits the file. Nothing is written to any cluster.`, `  # Stop exporting sample/whereami:
  strait unexport sample/whereami -f clusterset.yaml --commit

  # Only c3 stops exporting it:
  strait unexport sample/whereami --clusters c3 -f clusterset.yaml`
	}
	cmd := &cobra.Command{
		Use:     verb + " NAMESPACE/NAME -f FILE [--clusters c2,c3] [--commit]",
		Short:   strings.ToUpper(verb[:1]) + verb[1:] + " a service in a ClusterSet file (git first: edits the file, optionally commits it)",
		Long:    long,
		Example: example,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(o, export, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			// export: the services exported from some clusters, which --clusters widens
			// (a new service's name is the person's to type); unexport: every export.
			return file.Exports(o.file, export), cobra.ShellCompDirectiveNoFileComp
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "the ClusterSet file in a git working tree (required)")
	f.StringSliceVar(&o.clusters, "clusters", nil, "only these clusters (comma-separated or repeated; default every cluster)")
	f.BoolVar(&o.commit, "commit", false, "commit the file with git (that file alone)")
	f.StringVarP(&o.message, "message", "m", "", "the commit message (default: \"clusterset: "+verb+" NAMESPACE/NAME ...\")")
	_ = cmd.MarkFlagRequired("file")
	_ = cmd.MarkFlagFilename("file", "yaml", "yml")
	_ = cmd.RegisterFlagCompletionFunc("clusters", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return file.Clusters(o.file), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func run(o *options, export bool, arg string, stdout, stderr io.Writer) error {
	ns, name, err := file.ParseService(arg)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(o.file)
	if err != nil {
		return err
	}
	c := file.Change{Export: export, Namespace: ns, Name: name, Clusters: o.clusters}
	after, err := file.Edit(data, c)
	if file.IsNoChange(err) {
		fmt.Fprintf(stderr, "%s: %v\n", o.file, err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", o.file, err)
	}
	if err := file.Rewrite(o.file, after); err != nil {
		return err
	}
	if _, err := io.WriteString(stdout, udiff.File(o.file, string(data), string(after))); err != nil {
		return err
	}
	if !o.commit {
		return nil
	}
	msg := o.message
	if msg == "" {
		msg = commitMessage(c)
	}
	return file.GitCommit(o.file, msg, stdout, stderr)
}

func commitMessage(c file.Change) string {
	verb := "export"
	if !c.Export {
		verb = "unexport"
	}
	msg := "clusterset: " + verb + " " + c.Namespace + "/" + c.Name
	if len(c.Clusters) > 0 {
		if c.Export {
			msg += " from "
		} else {
			msg += " in "
		}
		msg += strings.Join(c.Clusters, ", ")
	}
	return msg
}
