package lab

import (
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/gitserver"
)

func newLabGitCmd(o *labOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "git",
		Short: "The lab's clusterset repo, which Flux (or Argo CD) syncs to the hub",
		Long: `The hub's ClusterSet comes from a git repo that "lab up" creates from the example and
serves on the host's loopback; Flux's source-controller clones it from the hub's network
(Argo CD's repo-server in a lab file with gitops: argocd). A push asks Flux to sync at
once, as a forge's webhook would (for Argo CD the git server posts a GitHub push event
to argocd-server's /api/webhook); Flux applies clusterset/ to the hub and waits for the
ClusterSet to be Ready (Argo CD judges it with the example's health check).

  strait lab git clone ./clusterset
  $EDITOR ./clusterset/clusterset/clusterset.yaml
  strait diff -f ./clusterset/clusterset/clusterset.yaml --kubeconfig <(strait lab kubeconfig hub)
                                                              # what the commit will change
  git -C ./clusterset commit -am "export sample/whereami" && git -C ./clusterset push
  strait lab status                                           # the revision applied

or, in one step, commit a file and wait for it to be applied:

  strait lab git commit -m "export sample/whereami" clusterset.yaml`,
	}
	cmd.AddCommand(newLabGitURLCmd(o), newLabGitCloneCmd(o), newLabGitCommitCmd(o))
	return cmd
}

func newLabGitURLCmd(o *labOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "url",
		Short: "Print the repo's clone URL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			url, err := o.lab(os.Stderr).GitURL()
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), url)
			return nil
		},
	}
}

func newLabGitCloneCmd(o *labOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "clone DIR",
		Short: "Clone the repo into DIR (git clone; push from there)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			url, err := o.lab(os.Stderr).GitURL()
			if err != nil {
				return err
			}
			git := exec.CommandContext(cmd.Context(), "git", "clone", url, args[0])
			git.Stdout, git.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return git.Run()
		},
	}
}

func newLabGitCommitCmd(o *labOptions) *cobra.Command {
	var message, path, author string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "commit -m MESSAGE FILE",
		Short: "Commit FILE as the repo's ClusterSet, ask Flux (or Argo CD) to sync, and wait for it",
		Long: `commit makes FILE the content of clusterset/clusterset.yaml (or --path) in one
commit on main, asks the lab's GitOps controller to sync, and waits until it applied it
and the ClusterSet is Ready, or refused it: then it prints the Kustomization's (or the
Application's) message, the webhook's answer, and exits 1. Revert with another commit
of the old file.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			l := o.lab(os.Stderr)
			ctx := cmd.Context()
			by := gitserver.Author{Name: author, Email: author + "@strait.invalid", When: time.Now()}
			commit, err := l.Push(ctx, map[string][]byte{path: data}, message, by)
			if commit != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "committed %s\n", commit)
			}
			if err != nil {
				return err
			}
			start := time.Now()
			s, err := l.WaitSynced(ctx, commit, timeout)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s applied %s in %.1fs: %s\n", s.Object, s.Applied, time.Since(start).Seconds(), s.Message)
			return nil
		},
	}
	cmd.Flags().StringVarP(&message, "message", "m", "", "commit message (required)")
	cmd.Flags().StringVar(&path, "path", lab.RepoClusterSet, "the file's path in the repo")
	cmd.Flags().StringVar(&author, "author", "person", "the commit's author name")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for the sync")
	_ = cmd.MarkFlagRequired("message")
	return cmd
}
