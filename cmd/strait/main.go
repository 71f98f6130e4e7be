package main

import (
	"os"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/straitnet/strait/cmd/strait/diagnose"
	"github.com/straitnet/strait/cmd/strait/diff"
	"github.com/straitnet/strait/cmd/strait/export"
	"github.com/straitnet/strait/cmd/strait/join"
	"github.com/straitnet/strait/cmd/strait/lab"
	"github.com/straitnet/strait/cmd/strait/render"
	"github.com/straitnet/strait/cmd/strait/show"
	"github.com/straitnet/strait/internal/cli"
)

func main() {
	// The commands say what they do themselves; controller-runtime's own log lines are
	// not for people. Without a logger it printed a stack trace ("log.SetLogger(...) was
	// never called") into a command that ran past 30 s, such as strait gather.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(cli.Main(newRootCmd(), os.Args[1:], os.Stderr))
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "strait",
		Short: "Declarative multi-cluster networking for Kubernetes: the command for people",
		Long: `Strait connects the pod and service networks of several Kubernetes clusters through
gateway tunnels, serves <svc>.<ns>.svc.clusterset.local, and lets clusters with
overlapping CIDRs talk through globalnet NAT — all from one ClusterSet kept in git.

strait is what people run: render shows what a ClusterSet means for every member, diff
what a change to it would do in the hub and the members before it lands, join and
unjoin register a member and undo it, show what the clusterset is doing (connections,
gateways, networks, exports, versions), diagnose what breaks traffic between the
members, verify proves pod, service and DNS traffic with test pods of its own,
benchmark measures their throughput and latency, gather a tarball for support,
uninstall removes Strait in order, export and unexport change the ClusterSet file's
exports (git first), lab runs whole clustersets on one machine. The daemons (hub, agent, dns, charon) are the other
binary, straitd.`,
	}
	root.AddCommand(render.NewCommand(), diff.NewCommand(), show.NewShowCommand(), export.NewExportCommand(),
		export.NewUnexportCommand(), lab.NewCommand(), show.NewVersionCommand(), diagnose.NewCommand(), diagnose.NewGatherCommand(), diagnose.NewVerifyCommand(), diagnose.NewBenchmarkCommand(), diagnose.NewUninstallCommand(),
		join.NewJoinCommand(), join.NewUnjoinCommand())
	return root
}
