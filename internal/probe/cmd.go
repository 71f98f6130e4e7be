package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// NewCommand is `straitd probe`: the subcommands strait diagnose runs in probe pods and
// in the agents' containers.
func NewCommand(straitTable string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "probe serve|dial|watch|mtu|lookup|node|flows",
		Short: "What strait diagnose runs in a member: serve and dial probes, look names up, read a node's facts",
		Long: `probe holds what strait diagnose runs inside a member cluster, from Strait's own image:
serve in a probe pod of every member, dial, watch, mtu and lookup exec'd in those pods, node
and flows exec'd in the agent's container. Each prints one JSON object and changes nothing.`,
		Example: `  straitd probe serve                      # TCP: answers the source address it saw; UDP: the datagram's length
  straitd probe dial --nonce n1 10.9.2.7:4243   # {"local":"10.8.1.5","seen":"10.8.1.5"}; the server logs "seen n1 10.8.1.5"
  straitd probe mtu 10.9.2.7:4243           # {"pathMTU":1370,"fullAnswered":true,"smallAnswered":true}
  straitd probe watch --for 20s 10.9.2.7:4243   # {"tries":180,"answers":171,"longestGapMillis":930,"sourceKept":true}
  straitd probe lookup whereami.sample.svc.clusterset.local
  straitd probe node                        # kube-proxy's mode, the links' MTUs, Strait's nftables chains
  straitd probe flows --to 10.9.2.7         # [{"protocol":6,"src":"10.8.1.5","dst":"10.9.2.7","replyDst":"10.250.1.13"}]: masqueraded`,
	}
	timeout := 3 * time.Second
	cmd.PersistentFlags().DurationVar(&timeout, "timeout", timeout, "how long each try waits for an answer")
	port := Port
	serve := &cobra.Command{
		Use: "serve", Short: "Serve probes on --port (TCP and UDP) until stopped", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(ctxOf(cmd), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return Serve(ctx, net.JoinHostPort("", strconv.Itoa(port)), cmd.OutOrStdout())
		},
	}
	serve.Flags().IntVar(&port, "port", port, "TCP and UDP port")
	var nonce string
	dial := &cobra.Command{
		Use: "dial HOST:PORT", Short: "Send hellos to a probe server, connect, and print the source address it saw", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := Dial(ctxOf(cmd), args[0], nonce, timeout)
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), s)
		},
	}
	dial.Flags().StringVar(&nonce, "nonce", "", "send hellos with this nonce first (the server logs their source address)")
	mtu := &cobra.Command{
		Use: "mtu HOST:PORT", Short: "Send don't-fragment datagrams of the path MTU and a small one to a probe server", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return printJSON(cmd.OutOrStdout(), PathMTU(ctxOf(cmd), args[0], timeout))
		},
	}
	var total, every time.Duration = 20 * time.Second, 100 * time.Millisecond
	watch := &cobra.Command{
		Use: "watch HOST:PORT", Short: "Connect to a probe server every --every for --for and print the longest gap", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return printJSON(cmd.OutOrStdout(), Watching(ctxOf(cmd), args[0], total, every, timeout))
		},
	}
	watch.Flags().DurationVar(&total, "for", total, "how long to watch")
	watch.Flags().DurationVar(&every, "every", every, "the interval between tries")
	lookup := &cobra.Command{
		Use: "lookup NAME", Short: "Resolve NAME with the pod's resolver", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(ctxOf(cmd), timeout)
			defer cancel()
			addrs, err := Lookup(ctx, args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), map[string][]string{"addresses": addrs})
		},
	}
	kubeProxy := DefaultKubeProxyMetrics
	node := &cobra.Command{
		Use: "node", Short: "Print this node's facts: kube-proxy's mode and masquerade bit, the links' MTUs, Strait's nftables chains", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printJSON(cmd.OutOrStdout(), Node(ctxOf(cmd), kubeProxy, straitTable))
		},
	}
	var to []string
	flows := &cobra.Command{
		Use: "flows --to IP,...", Short: "Print this node's conntrack entries towards the addresses: the source each left with", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := Flows(to)
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), f)
		},
	}
	flows.Flags().StringSliceVar(&to, "to", nil, "destination addresses")
	node.Flags().StringVar(&kubeProxy, "kube-proxy-metrics", kubeProxy, "kube-proxy's --metrics-bind-address")
	cmd.AddCommand(serve, dial, watch, mtu, lookup, node, flows)
	return cmd
}

func ctxOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
