package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		if !errors.Is(err, errReported) {
			fmt.Fprintln(os.Stderr, "error:", err)
		}
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "strait",
		Short: "Declarative multi-cluster networking for Kubernetes",
		Long: `Strait connects the pod and service networks of several Kubernetes clusters through
gateway tunnels, serves <svc>.<ns>.svc.clusterset.local, and lets clusters with
overlapping CIDRs talk through globalnet NAT — all from one ClusterSet kept in git.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newRenderCmd(),
		newHubCmd(),
		newAgentCmd(),
		newDNSCmd(),
		newCharonCmd(),
		newLabCmd(),
	)
	return root
}
