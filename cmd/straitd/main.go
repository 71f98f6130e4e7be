package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/straitnet/strait/controllers/hubcmd"
	"github.com/straitnet/strait/dns/dnscmd"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/probe"
	"github.com/straitnet/strait/nodeagent/agentcmd"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
)

func main() {
	os.Exit(cli.Main(newRootCmd(), os.Args[1:], os.Stderr))
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "straitd",
		Short: "Strait's daemons: hub, agent, dns and charon",
		Long: `straitd holds Strait's daemons, the programs of the image: hub (the ClusterSet
controller and its webhook, in the hub cluster), agent (one per node of every member),
charon (the agent's IPsec sidecar on gateway nodes) and dns (clusterset.local in every
member); probe is what strait diagnose runs in the members. People run strait (render, lab).`,
	}
	root.AddCommand(hubcmd.NewCommand(), agentcmd.NewCommand(), agentcmd.NewCharonCommand(), dnscmd.NewCommand(),
		cli.NewVersionCommand("straitd"), probe.NewCommand(probe.Tables{Strait: route.NFTable, Fence: kernel.FenceTable}))
	return root
}
