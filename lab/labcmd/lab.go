package labcmd

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/test/k8sversion"
)

type labOptions struct {
	state    string
	k8sBin   string
	coredns  string
	straitd  string
	portBase int
}

// NewCommand is `strait lab`.
func NewCommand() *cobra.Command {
	o := &labOptions{}
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Whole clustersets on this machine: real control planes, nodes and pods as network namespaces",
		Long: `lab runs a clusterset on one machine, as root, without containers. Every cluster gets
a control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) in its own
network namespace, nodes as namespaces on a per-cluster LAN (gateway nodes also on a shared
WAN), pods as namespaces behind their node with host-gw routes, kube-proxy in nftables
mode on every node, CoreDNS as the cluster DNS, and a lab kubelet that runs built-in
workloads (whereami, iperf3, an idle client). kubectl works from the host:

  strait lab up --example basic
  kubectl --kubeconfig <(strait lab kubeconfig c1) get pods -A
  strait lab exec c1 sample/client -- curl -s whereami-cs
  strait lab down

Everything the lab creates is named sl-* (namespaces, links) or lives in the state
directory; "lab down" removes all of it, also after a crash of "lab up".`,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.state, "state", defaultStateDir(), "state directory (pids, certificates, kubeconfigs, logs); env STRAIT_LAB_STATE")
	f.StringVar(&o.k8sBin, "k8s-bin", "", "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy (default $KUBEBUILDER_ASSETS, else bin/k8s/"+k8sversion.Version+" next to this binary or in the repo)")
	f.StringVar(&o.coredns, "coredns", "", "coredns binary (default bin/coredns next to this binary or in the repo; make coredns)")
	f.StringVar(&o.straitd, "straitd", "", "the daemons' binary the lab runs as hub, agent, dns and charon (default straitd next to this binary or in the repo's bin/; make build)")
	f.IntVar(&o.portBase, "port-base", 16443, "host loopback port of the hub's API server forwarder; members follow")
	cmd.AddCommand(newLabUpCmd(o), newLabDownCmd(o), newLabStatusCmd(o), newLabExecCmd(o),
		newLabKubeconfigCmd(o), newLabServeCmd(o), newLabWorkloadCmd())
	return cmd
}

// defaultStateDir is $STRAIT_LAB_STATE, else lab.DefaultStateDir.
func defaultStateDir() string {
	if d := os.Getenv("STRAIT_LAB_STATE"); d != "" {
		return d
	}
	return lab.DefaultStateDir
}

// repoRoot finds the directory holding examples/clusterset: the working directory or a
// parent, else the parent of the directory of this binary.
func repoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "examples", "clusterset")); err == nil {
			return d
		}
	}
	if exe, err := os.Executable(); err == nil {
		return filepath.Dir(filepath.Dir(exe))
	}
	return dir
}

func firstExisting(paths ...string) string {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	for _, p := range paths {
		if p != "" {
			return p
		}
	}
	return ""
}

func (o *labOptions) lab(out *os.File) *lab.Lab {
	exe, _ := os.Executable()
	root := repoRoot()
	k8s := o.k8sBin
	if k8s == "" {
		k8s = firstExisting(os.Getenv("KUBEBUILDER_ASSETS"), filepath.Join(filepath.Dir(exe), "k8s", k8sversion.Version),
			filepath.Join(root, "bin", "k8s", k8sversion.Version))
	}
	coredns := o.coredns
	if coredns == "" {
		coredns = firstExisting(filepath.Join(filepath.Dir(exe), "coredns"), filepath.Join(root, "bin", "coredns"))
	}
	straitd := o.straitd
	if straitd == "" {
		straitd = firstExisting(filepath.Join(filepath.Dir(exe), "straitd"), filepath.Join(root, "bin", "straitd"))
	}
	return lab.New(lab.Options{StateDir: o.state, K8sBin: k8s, CoreDNS: coredns, Strait: exe, Straitd: straitd,
		PortBase: o.portBase, Out: out})
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func requireRootCmd() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the lab needs root (network namespaces, veths, nftables)")
	}
	return nil
}

func newLabUpCmd(o *labOptions) *cobra.Command {
	var file, example string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "up [-f LAB.yaml | --example NAME]",
		Short: "Bring a lab up (idempotent: run again to complete or check it)",
		Long: `up builds the lab's network, starts every control plane, the lab daemon (loopback
forwarders and kubelets), CoreDNS and kube-proxy, creates the CRDs, the sample workloads
(namespace sample: whereami-cs, the StatefulSet whereami behind headless whereami-ss, an
idle client, iperf3) and, on the hub, the ClusterSet with one kubeconfig Secret per member.
It waits until every sample pod is ready.

A lab file is YAML:

  clusterSet: ../examples/clusterset/basic/clusterset.yaml   # relative to the lab file
  hub: true
  gateways: 2        # gateway-capable nodes per cluster (labelled strait.io/gateway=true)
  workers: 1         # plain nodes per cluster
  sampleWorkloads: true

--example NAME uses examples/clusterset/NAME with a hub, 2 gateways, 1 worker and the
sample workloads.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireRootCmd(); err != nil {
				return err
			}
			spec, csPath, err := loadLabSpec(file, example)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(csPath)
			if err != nil {
				return err
			}
			root := repoRoot()
			ctx, cancel := signalContext()
			defer cancel()
			fmt.Fprintf(os.Stdout, "lab up: %s\n", csPath)
			return o.lab(os.Stdout).Up(ctx, lab.UpOptions{Spec: spec, ClusterSet: data, Timeout: timeout,
				WebhookManifest: filepath.Join(root, "kustomize", "hub", "workloads", "webhook.yaml"),
				CRDDirs:         []string{filepath.Join(root, "kustomize", "crd", "bases"), filepath.Join(root, "kustomize", "crd", "mcs")}})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "lab file (YAML)")
	cmd.Flags().StringVar(&example, "example", "", "an example under examples/clusterset (basic, globalnet, three-clusters)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Minute, "how long to wait for the sample pods to be ready")
	cmd.MarkFlagsMutuallyExclusive("file", "example")
	return cmd
}

// loadLabSpec reads a lab file, or makes the default spec for an example.
func loadLabSpec(file, example string) (topology.Spec, string, error) {
	switch {
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return topology.Spec{}, "", err
		}
		var spec topology.Spec
		if err := yaml.UnmarshalStrict(data, &spec); err != nil {
			return spec, "", fmt.Errorf("%s: %w", file, err)
		}
		cs := spec.ClusterSet
		if !filepath.IsAbs(cs) {
			cs = filepath.Join(filepath.Dir(file), cs)
		}
		spec.ClusterSet = cs
		return spec, cs, nil
	case example != "":
		cs := filepath.Join(repoRoot(), "examples", "clusterset", example, "clusterset.yaml")
		return topology.DefaultSpec(cs), cs, nil
	}
	return topology.Spec{}, "", fmt.Errorf("give -f LAB.yaml or --example NAME")
}

func newLabDownCmd(o *labOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "down",
		Short: "Remove the lab: processes, sl-* namespaces and links, /etc/netns/sl-*, the state directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireRootCmd(); err != nil {
				return err
			}
			fmt.Fprintln(os.Stdout, "lab down")
			return o.lab(os.Stdout).Down(context.Background())
		},
	}
}

func newLabStatusCmd(o *labOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the lab's processes, nodes and pods",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.lab(os.Stdout).Status(cmd.Context(), cmd.OutOrStdout())
		},
	}
}

func newLabKubeconfigCmd(o *labOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "kubeconfig CLUSTER",
		Short: "Print a cluster's kubeconfig (API server on 127.0.0.1 through the lab's forwarder)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := o.lab(os.Stderr).Kubeconfig(args[0])
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
}

func newLabExecCmd(o *labOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "exec CLUSTER POD -- CMD [ARGS...]",
		Short: "Run a command inside a pod's network namespace (with its resolv.conf)",
		Long: `exec runs CMD inside the network namespace of POD (NAME, NAMESPACE/NAME, or a
Deployment's name when it has one pod), with /etc/resolv.conf pointing at the cluster DNS:

  strait lab exec c1 sample/client -- nslookup whereami-cs
  strait lab exec c1 client -- curl -s whereami-cs.sample.svc.cluster.local`,
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireRootCmd(); err != nil {
				return err
			}
			ns, err := o.lab(os.Stderr).PodNamespace(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			return lab.Exec(ns, args[2:])
		},
	}
}

func newLabServeCmd(o *labOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "serve",
		Short:  "The lab daemon (started by lab up): loopback forwarders, kubelets, Corefile sync",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return o.lab(os.Stderr).Serve(ctx)
		},
	}
}

func newLabWorkloadCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "workload", Short: "Built-in pod workloads and client tools (run inside pods)", Hidden: true}
	var listen string
	var id workload.Identity
	w := &cobra.Command{
		Use:   "whereami",
		Short: "HTTP server answering with cluster, node, pod, pod IP and the caller's address",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return workload.ServeWhereami(ctx, listen, id)
		},
	}
	w.Flags().StringVar(&listen, "listen", ":8080", "listen address")
	w.Flags().StringVar(&id.Cluster, "cluster", "", "cluster name")
	w.Flags().StringVar(&id.Node, "node", "", "node name")
	w.Flags().StringVar(&id.Namespace, "namespace", "", "pod namespace")
	w.Flags().StringVar(&id.Pod, "pod", "", "pod name")
	w.Flags().StringVar(&id.PodIP, "pod-ip", "", "pod IP")
	lookup := &cobra.Command{
		Use:   "lookup NAME",
		Short: "Resolve NAME through /etc/resolv.conf (in a pod: its search list and the cluster DNS)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			addrs, err := (&net.Resolver{PreferGo: true}).LookupHost(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", args[0], strings.Join(addrs, " "))
			return nil
		},
	}
	get := &cobra.Command{
		Use:   "get URL",
		Short: "HTTP GET URL and print the body (whereami answers with who it is and who called)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, err = io.Copy(cmd.OutOrStdout(), resp.Body)
			return err
		},
	}
	cmd.AddCommand(w, lookup, get)
	return cmd
}
