package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/straitnet/strait/internal/cli"
)

// NewCommand is `straitd probe`: the subcommands strait diagnose runs in probe pods and
// in the agents' containers.
func NewCommand(tables Tables) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "probe serve|dial|watch|mtu|lookup|throughput|latency|node|flows",
		Short: "What strait diagnose runs in a member: serve and dial probes, look names up, read a node's facts",
		Long: `probe holds what strait diagnose runs inside a member cluster, from Strait's own image:
serve in a probe pod of every member, dial, watch, mtu and lookup exec'd in those pods, node
and flows exec'd in the agent's container; strait benchmark execs throughput and latency in
its probe pods. Each prints one JSON object and changes nothing.`,
		Example: `  straitd probe serve                      # TCP: answers the source address it saw; UDP: the datagram's length
  straitd probe dial --nonce n1 10.9.2.7:4243   # {"local":"10.8.1.5","seen":"10.8.1.5"}; the server logs "seen n1 10.8.1.5"
  straitd probe mtu 10.9.2.7:4243           # {"pathMTU":1370,"fullAnswered":true,"smallAnswered":true}
  straitd probe watch --for 20s 10.9.2.7:4243   # {"tries":180,"answers":171,"longestGapMillis":930,"sourceKept":true}
  straitd probe lookup whereami.sample.svc.clusterset.local
  straitd probe lookup --records A,AAAA whereami.sample.svc.clusterset.local   # {"addresses":[...],"records":[{"type":"A","rcode":"NOERROR","addresses":[...]},{"type":"AAAA","rcode":"NOERROR"}]}
  straitd probe throughput --for 5s 10.9.2.7:4244   # {"bytes":612368384,"seconds":4.99,"bitsPerSecond":981753472}
  straitd probe latency --count 200 10.9.2.7:4244   # {"count":200,"minMicros":61.2,"avgMicros":88.4,...}
  straitd probe node --udp-ports 51871,4804 # kube-proxy's mode, the links' MTUs, Strait's nftables chains and fences, rules dropping those ports
  straitd probe flows --to 10.9.2.7         # [{"protocol":6,"src":"10.8.1.5","dst":"10.9.2.7","replyDst":"10.250.1.13"}]: masqueraded`,
	}
	timeout := 3 * time.Second
	cmd.PersistentFlags().DurationVar(&timeout, "timeout", timeout, "how long each try waits for an answer")
	port, benchPort := Port, BenchPort
	serve := &cobra.Command{
		Use: "serve", Short: "Serve probes on --port (TCP and UDP) and benchmarks on --bench-port (TCP) until stopped", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cli.Context(cmd), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			bench := make(chan error, 1)
			go func() { bench <- ServeBench(ctx, net.JoinHostPort("", strconv.Itoa(benchPort))) }()
			err := Serve(ctx, net.JoinHostPort("", strconv.Itoa(port)), cmd.OutOrStdout())
			stop()
			return errors.Join(err, <-bench)
		},
	}
	serve.Flags().IntVar(&port, "port", port, "TCP and UDP port")
	serve.Flags().IntVar(&benchPort, "bench-port", benchPort, "TCP port of the benchmark server")
	benchFor, count := 5*time.Second, 200
	throughput := &cobra.Command{
		Use: "throughput HOST:PORT", Short: "Send to a probe pod's benchmark server for --for and print what it received", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := MeasureThroughput(cli.Context(cmd), args[0], benchFor, timeout)
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), t)
		},
	}
	throughput.Flags().DurationVar(&benchFor, "for", benchFor, "how long to send")
	latency := &cobra.Command{
		Use: "latency HOST:PORT", Short: "Time --count round trips of 64-byte messages to a probe pod's benchmark server", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := MeasureLatency(cli.Context(cmd), args[0], count, timeout)
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), l)
		},
	}
	latency.Flags().IntVar(&count, "count", count, "how many round trips")
	var nonce string
	dial := &cobra.Command{
		Use: "dial HOST:PORT", Short: "Send hellos to a probe server, connect, and print the source address it saw", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := Dial(cli.Context(cmd), args[0], nonce, timeout)
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
			return printJSON(cmd.OutOrStdout(), PathMTU(cli.Context(cmd), args[0], timeout))
		},
	}
	var total, every time.Duration = 20 * time.Second, 100 * time.Millisecond
	watch := &cobra.Command{
		Use: "watch HOST:PORT", Short: "Connect to a probe server every --every for --for and print the longest gap", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return printJSON(cmd.OutOrStdout(), Watching(cli.Context(cmd), args[0], total, every, timeout))
		},
	}
	watch.Flags().DurationVar(&total, "for", total, "how long to watch")
	watch.Flags().DurationVar(&every, "every", every, "the interval between tries")
	var records []string
	lookup := &cobra.Command{
		Use: "lookup NAME", Short: "Resolve NAME with the pod's resolver; with --records, ask its DNS servers for each type and print the response codes", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cli.Context(cmd), timeout)
			defer cancel()
			if len(records) > 0 {
				rs, err := LookupRecords(ctx, ResolvConf, args[0], records, timeout/time.Duration(len(records)))
				if err != nil {
					return err
				}
				addrs := []string{}
				for _, r := range rs {
					addrs = append(addrs, r.Addresses...)
				}
				return printJSON(cmd.OutOrStdout(), map[string]any{"addresses": addrs, "records": rs})
			}
			addrs, err := Lookup(ctx, args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), map[string][]string{"addresses": addrs})
		},
	}
	lookup.Flags().StringSliceVar(&records, "records", nil, "A, AAAA: query the pod's DNS servers for these record types, the name taken as fully qualified")
	kubeProxy := DefaultKubeProxyMetrics
	var udpPorts []int
	node := &cobra.Command{
		Use: "node", Short: "Print this node's facts: kube-proxy's mode and masquerade bit, the links' MTUs, Strait's nftables chains and fences, rules that drop --udp-ports", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return printJSON(cmd.OutOrStdout(), Node(cli.Context(cmd), kubeProxy, tables, udpPorts))
		},
	}
	node.Flags().IntSliceVar(&udpPorts, "udp-ports", nil, "UDP ports whose drops to look for in the node's ip, ip6 and inet tables (the cable's, vx-strait's)")
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
	cmd.AddCommand(serve, dial, watch, mtu, lookup, throughput, latency, node, flows)
	return cmd
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
