package agentcmd

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable/ipsec"
)

// NewCharonCommand is `straitd charon`, the agent's IPsec sidecar on gateway nodes.
func NewCharonCommand() *cobra.Command {
	c := ipsec.Charon{}
	privateRun := true
	cmd := &cobra.Command{
		Use:   "charon",
		Short: "Run strongSwan's charon as the gateway's IPsec sidecar",
		Long: `Run strongSwan's charon for the ipsec cable driver, as the sidecar beside
'straitd agent' on gateway nodes. It writes its own strongswan.conf into --dir (an
explicit plugin list, nothing from /etc/strongswan.d), opens the VICI socket
<dir>/charon.vici that the agent drives, gives charon a private /run, and on SIGTERM
stops charon and removes its files. --dir must not be under /run: charon's
/run is its own.

The agent loads connections and keys through VICI; this command configures none.
--port must equal the cable port of the Membership (IKE and ESP-in-UDP share it).
Use --libipsec on kernels without ESP: charon then does ESP in userspace through the
TUN device ipsec0.

The private /run needs CAP_SYS_ADMIN (a mount namespace and a tmpfs). In a container,
whose /run is its own already (mount an emptyDir there), pass --private-run=false:
charon then needs only NET_ADMIN and, with --libipsec, NET_RAW and /dev/net/tun.`,
		Example: `  straitd charon --dir /var/lib/strait/charon --port 4501 --libipsec
  straitd charon --private-run=false   # in the agent's pod, beside straitd agent`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.SharedRun = !privateRun
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return c.Run(ctx, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&c.Dir, "dir", ipsec.DefaultCharonDir, "directory for strongswan.conf and the VICI socket, shared with the agent")
	f.IntVar(&c.NATTPort, "port", int(straitv1.DefaultIPsecPort), "UDP port for IKE and ESP-in-UDP (the ClusterSet's cable port)")
	f.BoolVar(&c.Libipsec, "libipsec", false, "userspace ESP through a TUN (kernel-libipsec), for kernels without ESP")
	f.StringVar(&c.Binary, "charon", ipsec.CharonPath, "path of the charon executable")
	f.IntVar(&c.RoutingTable, "routing-table", ipsec.DefaultRoutingTable, "charon's own routing table (libipsec installs a route per SA there)")
	f.BoolVar(&privateRun, "private-run", true, "give charon a /run of its own in a private mount namespace (needs CAP_SYS_ADMIN); false where its /run is its own already, as in a container")
	f.IntVar(&c.RoutingTablePrio, "routing-table-prio", ipsec.DefaultRoutingTablePrio, "priority of the rule for charon's table; must come after Strait's rule")
	return cmd
}
