package agentcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/nodeagent/agent"
	"github.com/straitnet/strait/nodeagent/cable/drivers"
	"github.com/straitnet/strait/nodeagent/cable/ipsec"
	"github.com/straitnet/strait/nodeagent/gateway"
	"github.com/straitnet/strait/nodeagent/health"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
)

type agentOptions struct {
	nodeName       string
	kubeconfig     string
	namespace      string
	resync         time.Duration
	healthInterval time.Duration
	election       gateway.Timing
	metricsAddr    string
	healthAddr     string
	cleanup        bool
	dump           bool
	netnsPath      string
	procSys        string
	daemonSet      string
	viciSocket     string
	verbosity      int
}

// NewCommand is `straitd agent`.
func NewCommand() *cobra.Command {
	o := &agentOptions{election: gateway.FastTiming()}
	cmd := &cobra.Command{
		Use:   "agent --node-name NODE",
		Short: "Run the node agent (DaemonSet, hostNetwork, NET_ADMIN)",
		Long: `agent converges this node's data plane to what the member cluster's Membership, Peers,
Nodes and gateway Lease say: the vx-strait VXLAN device towards the active gateway,
routes to remote CIDRs in routing table 4242 (rule priority 4242, route protocol 242),
MTU and TCP MSS clamping, and the nftables table "strait". On nodes matching the
Membership's gateway selector it campaigns for the Lease strait-system/strait-gateway;
the active gateway runs the cable to every Peer, globalnet NAT, health checks into Peer
status, and every gateway-capable node publishes its Gateway object.

It is level-triggered: watch events, netlink events and a periodic resync each compute
the whole desired state and converge to it; nothing it did not create is touched. On
SIGTERM it releases the Lease (a passive gateway's watch sees that and takes over) and
leaves the kernel as it is.

  straitd agent --node-name "$NODE_NAME"
  straitd agent --dump       # print what of Strait's is on this node
  straitd agent --cleanup    # remove everything of Strait's from this node`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAgent(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.PreRunE = func(*cobra.Command, []string) error { return o.election.Validate() }
	f := cmd.Flags()
	f.StringVar(&o.nodeName, "node-name", os.Getenv("NODE_NAME"), "this node's name (default $NODE_NAME)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the member cluster (default: in-cluster, then $KUBECONFIG)")
	f.StringVar(&o.namespace, "namespace", straitv1.SystemNamespace, "namespace of Strait's objects in the member")
	f.DurationVar(&o.resync, "resync", 30*time.Second, "period of the full resync")
	f.DurationVar(&o.healthInterval, "health-interval", 5*time.Second, "how often the active gateway health-checks every peer")
	f.DurationVar(&o.election.LeaseDuration, "lease-duration", o.election.LeaseDuration, "gateway Lease duration, whole seconds: a crashed gateway is replaced after this")
	f.DurationVar(&o.election.RenewDeadline, "renew-deadline", o.election.RenewDeadline, "the active gateway steps down when it has not renewed within this (< --lease-duration, > 1.2 × --retry-period)")
	f.DurationVar(&o.election.RetryPeriod, "retry-period", o.election.RetryPeriod, "how often the active gateway renews the Lease (one write each; standbys only watch it)")
	f.StringVar(&o.metricsAddr, "metrics-bind-address", ":9342", `Prometheus metrics address ("0" disables)`)
	f.StringVar(&o.healthAddr, "health-probe-bind-address", ":9343", `healthz/readyz address ("0" disables)`)
	f.BoolVar(&o.cleanup, "cleanup", false, "remove everything of Strait's from this node (devices, routes, rules, nftables table, cables) and exit")
	f.BoolVar(&o.dump, "dump", false, "print everything of Strait's on this node and exit")
	f.StringVar(&o.viciSocket, "vici-socket", ipsec.Charon{Dir: ipsec.DefaultCharonDir}.VICISocket(), "VICI socket of the charon sidecar (in straitd charon --dir), for the ipsec cable")
	f.StringVar(&o.daemonSet, "daemonset", "strait-agent", "the agent's DaemonSet in --namespace: when it is gone or being deleted at shutdown (kubectl delete -k), the agent removes everything of Strait's from the node before it exits; empty never cleans")
	f.StringVar(&o.procSys, "proc-sys", "/proc/sys", "where the node's /proc/sys/net is writable (the net sysctls it sets: rp_filter of vx-strait and of the underlay); a container that is not privileged mounts the host's /proc/sys/net there, as the DaemonSet does at /host/proc/sys/net")
	f.IntVar(&o.verbosity, "v", 0, "log verbosity: 1 adds timestamps, 2 adds wireguard-go's every handshake and keepalive")
	f.StringVar(&o.netnsPath, "netns", "", "program the data plane in this network namespace (a path like /var/run/netns/NAME) while talking to the API server from the agent's own; for labs that run nodes as namespaces")
	return cmd
}

func runAgent(ctx context.Context, o *agentOptions, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ns := netns.None()
	if o.netnsPath != "" {
		h, err := netns.GetFromPath(o.netnsPath)
		if err != nil {
			return fmt.Errorf("--netns %s: %w", o.netnsPath, err)
		}
		defer h.Close()
		ns = h
	}
	k, err := kernel.NewLinux(ns)
	if err != nil {
		return err
	}
	defer k.Close()
	k.UseProcSys(o.procSys)
	var nl *netlink.Handle // cable drivers program the same namespace
	if ns.IsOpen() {
		if nl, err = netlink.NewHandleAt(ns); err != nil {
			return err
		}
		defer nl.Close()
	}
	switch {
	case o.dump:
		d, err := kernel.Dump(ctx, k, route.Ownership())
		fmt.Fprint(stdout, d)
		return err
	case o.cleanup:
		// Without the API server: a cleanup must not create the wireguard key Secret.
		return errors.Join(agent.Cleanup(ctx, k, nil), drivers.Cleanup(ctx, cableOptions(o.namespace, o.viciSocket, nl, logr.Discard())))
	}
	if o.nodeName == "" {
		return errors.New("--node-name (or $NODE_NAME) is required")
	}
	cfg, err := cli.RESTConfig(o.kubeconfig, "strait-agent")
	if err != nil {
		return err
	}
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(stderr, prefix, args) },
		funcr.Options{Verbosity: o.verbosity, LogTimestamp: o.verbosity > 0})
	ctrl.SetLogger(log)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	prober := health.NewICMP(ns, 5, 100*time.Millisecond, time.Second)
	a, err := agent.New(cfg, agent.Config{
		NodeName: o.nodeName, Namespace: o.namespace, Resync: o.resync, HealthInterval: o.healthInterval,
		Election: o.election, Kernel: k,
		Cables: cableFactory(cfg, o.namespace, o.viciSocket, nl, log),
		// One ICMP socket kind for both: the rounds of health checks, and the first
		// answers that time a failover to this node (failover.go).
		Prober: prober, FailoverProber: prober,
		MetricsAddr: o.metricsAddr, HealthAddr: o.healthAddr, Metrics: ctrlmetrics.Registry,
	})
	if err != nil {
		return err
	}
	runErr := a.Run(ctx)
	// Shut down: a rolling update keeps the node's data path for the next agent; an
	// uninstall (kubectl delete -k) takes it away with the DaemonSet.
	cctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if o.daemonSet != "" && uninstalling(cctx, cfg, o.namespace, o.daemonSet) {
		log.Info("Strait is being removed from this cluster (its DaemonSet or ServiceAccount is gone): cleaning the node")
		return errors.Join(runErr, agent.Cleanup(cctx, k, nil), drivers.Cleanup(cctx, cableOptions(o.namespace, o.viciSocket, nl, logr.Discard())))
	}
	return runErr
}

// uninstalling says whether the agent's DaemonSet is gone or being deleted, or the
// agent may no longer ask (its ServiceAccount or role went with the install). An API
// server that cannot be reached says nothing: the data path stays.
func uninstalling(ctx context.Context, cfg *rest.Config, namespace, daemonSet string) bool {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return false
	}
	ds, err := c.AppsV1().DaemonSets(namespace).Get(ctx, daemonSet, metav1.GetOptions{})
	switch {
	case err == nil:
		return ds.DeletionTimestamp != nil
	case apierrors.IsNotFound(err), apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return true
	}
	return false
}
