package lab

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/straitnet/strait/internal/k8sversion"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/monitoring"
	"github.com/straitnet/strait/lab/topology"
)

type labOptions struct {
	state   string
	k8sBin  string
	coredns string
	// prometheus is the prometheus binary of a lab with monitoring.
	prometheus string
	nodeBin    string
	images     string
	portBase   int
}

// NewCommand is `strait lab`.
func NewCommand() *cobra.Command {
	o := &labOptions{}
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Whole clustersets on this machine: real control planes and real nodes in network namespaces",
		Long: `lab runs a clusterset on one machine, as root, without Docker. Every cluster gets a
control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) in its own
network namespace, real nodes (kubelet, containerd, runc, a CNI bridge) each in a network
namespace on a per-cluster LAN (gateway nodes also on a shared WAN) with host-gw routes
between their pod CIDRs and a router to the WAN, where a namespace stands for the
internet, kube-proxy in nftables mode on every node, CoreDNS as the cluster DNS, and the
sample workloads from locally built images (whereami, iperf3, an idle client with curl
and dig). The host routes exactly the lab's ranges into the lab (link sl-lab), chosen
clear of its own routes, addresses and resolver, so kubectl and any lab address work
from the host and nothing of the lab leaves the machine:

  strait lab up --example basic
  kubectl --kubeconfig <(strait lab kubeconfig c1) get pods -A
  strait lab exec c1 sample/client -- curl -s whereami-cs
  strait lab down

Everything the lab creates is named sl-* (namespaces, links, the host's sl-lab) or lives
in the state directory; "lab down" removes all of it, also after a crash of "lab up".`,
	}
	f := cmd.PersistentFlags()
	f.StringVar(&o.state, "state", defaultStateDir(), "state directory (pids, certificates, kubeconfigs, logs); env STRAIT_LAB_STATE")
	f.StringVar(&o.k8sBin, "k8s-bin", "", "directory with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy (default $KUBEBUILDER_ASSETS, else bin/k8s/"+k8sversion.Version+" next to this binary or in the repo)")
	f.StringVar(&o.coredns, "coredns", "", "coredns binary (default bin/coredns next to this binary or in the repo; make coredns)")
	f.StringVar(&o.prometheus, "prometheus", "", "prometheus binary of a lab file with monitoring: true (default bin/prometheus/"+monitoring.PrometheusVersion+"/prometheus in the repo; make prometheus-binaries)")
	f.StringVar(&o.nodeBin, "node-bin", "", "real nodes: directory with containerd, runc and the CNI plugins (default bin/node next to this binary or in the repo; make node-binaries)")
	f.StringVar(&o.images, "images", "", "real nodes: directory with the image tarballs (default bin/images next to this binary or in the repo; make images)")
	f.IntVar(&o.portBase, "port-base", 16443, "host loopback port of the hub's API server forwarder; members follow")
	cmd.AddCommand(newLabUpCmd(o), newLabDownCmd(o), newLabStatusCmd(o), newLabCheckCmd(o), newLabExecCmd(o),
		newLabKubeconfigCmd(o), newLabLoadImageCmd(o), newLabGitCmd(o), newLabServeCmd(o))
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
	// A path from its flag, else next to this binary, else in the repository's bin/.
	find := func(flag string, rel ...string) string {
		if flag != "" {
			return flag
		}
		return firstExisting(filepath.Join(append([]string{filepath.Dir(exe)}, rel...)...),
			filepath.Join(append([]string{root, "bin"}, rel...)...))
	}
	k8s := o.k8sBin
	if k8s == "" {
		k8s = firstExisting(os.Getenv("KUBEBUILDER_ASSETS"), find("", "k8s", k8sversion.Version))
	}
	coredns := find(o.coredns, "coredns")
	prometheus := find(o.prometheus, "prometheus", monitoring.PrometheusVersion, "prometheus")
	nodeBin, images := find(o.nodeBin, "node"), find(o.images, "images")
	return lab.New(lab.Options{StateDir: o.state, K8sBin: k8s, CoreDNS: coredns, Strait: exe,
		NodeBin: nodeBin, ImageDir: images, Prometheus: prometheus, Kustomize: filepath.Join(root, "kustomize"), PortBase: o.portBase, Out: out})
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
forwarders, the git server), the real nodes, CoreDNS and kube-proxy, installs Strait in
every cluster from kustomize/ (kubectl apply --server-side -k), creates the sample
workloads (namespace sample: whereami-cs, the StatefulSet whereami behind headless
whereami-ss, an idle client, iperf3) and, on the hub, one kubeconfig Secret per member.
The ClusterSet comes from git: up creates the clusterset repo from the example, installs
Flux's source-controller and kustomize-controller in the hub (Argo CD with gitops:
argocd) and points them at it, and waits until they applied it and the ClusterSet is
Ready, then until every sample pod is ready. "strait lab git --help" shows how to commit to the repo.

A lab file is YAML:

  clusterSet: ../examples/clusterset/basic/clusterset.yaml   # relative to the lab file
  hub: true
  gateways: 2        # gateway-capable nodes per cluster (labelled strait.io/gateway=true)
  workers: 1         # plain nodes per cluster
  sampleWorkloads: true
  gitops: flux       # optional: flux (default) or argocd (make argocd-images)
  ipFamilies: [IPv4, IPv6]  # optional: dual-stack clusters (default [IPv4]), or [IPv6]: IPv6-only
  networks:          # optional; each one left out is the first default clear of the host
    lan: 10.250.0.0/16
    wan: 198.18.0.0/24
    internet: 198.18.1.0/24
    ipv6: fd10:1ab::/48   # the IPv6 range of a lab with IPv6 (a /48 of fc00::/7)
  gatewayLease:      # optional: the agents' gateway Lease timing (default 1s, 700ms, 250ms)
    duration: 2s     # for an API server that stalls past the renew deadline (docs/agent.md)
    renewDeadline: 1500ms
    retryPeriod: 500ms

--example NAME uses examples/clusterset/NAME with a hub, 2 gateways, 1 worker and the
sample workloads, or the lab file examples/clusterset/NAME/lab.yaml when there is one
(dualstack: the basic clusterset in both families, on dual-stack clusters; ipv6only:
two IPv6-only clusters over an IPv6 underlay).

Every node (and one for the hub) is a real node: kubelet, containerd, runc and a CNI
bridge (make node-binaries images); the sample workloads run the local images, and
kubectl logs, exec and port-forward work as on any cluster.`,
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
			ctx, cancel := signalContext()
			defer cancel()
			fmt.Fprintf(os.Stdout, "lab up: %s\n", csPath)
			return o.lab(os.Stdout).Up(ctx, lab.UpOptions{Spec: spec, ClusterSet: data, Timeout: timeout})
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "lab file (YAML)")
	cmd.Flags().StringVar(&example, "example", "", "an example under examples/clusterset (basic, globalnet, three-clusters, dualstack, ipv6only)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Minute, "how long to wait for the sample pods to be ready")
	cmd.MarkFlagsMutuallyExclusive("file", "example")
	return cmd
}

// loadLabSpec reads a lab file, or makes the default spec for an example: an example
// whose directory holds a lab.yaml (dualstack) is that lab file.
func loadLabSpec(file, example string) (topology.Spec, string, error) {
	if example != "" {
		if f := filepath.Join(repoRoot(), "examples", "clusterset", example, "lab.yaml"); fileExists(f) {
			file, example = f, ""
		}
	}
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

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
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

func newLabCheckCmd(o *labOptions) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Run the seed documents' checks from a client pod: clusterset.local lookups and a GET of whereami",
		Long: `check runs, in the client pod of the first cluster that does not export them (kubectl
exec), the seed documents' checks of the sample exports: dig of
whereami-cs.sample.svc.clusterset.local, of each exporting cluster's
<cluster>.whereami-cs..., of whereami-ss... and of whereami-0.<cluster>.whereami-ss...,
then curl of http://whereami-cs.sample.svc.clusterset.local. A lookup passes when it
answers at least one address and every address lies in the exporting clusters' service
CIDRs (whereami-cs) or pod CIDRs (whereami-ss), under globalnet in their global CIDRs;
the GET when whereami answers from an exporting cluster. Each check is tried again
until --timeout; it exits 1 naming every check that failed and what it got.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireRootCmd(); err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			return o.lab(os.Stdout).CheckSeed(ctx, os.Stdout, timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long the checks may keep failing before they count as failed")
	return cmd
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
		Short: "Run a command inside a pod (kubectl exec)",
		Long: `exec runs CMD inside POD (NAME, NAMESPACE/NAME, or a Deployment's name when it has
one pod) through the API server, as kubectl exec does, stdin, stdout and stderr attached:

  strait lab exec c1 sample/client -- nslookup whereami-cs
  strait lab exec c1 client -- curl -s whereami-cs.sample.svc.cluster.local`,
		Args: cobra.MinimumNArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireRootCmd(); err != nil {
				return err
			}
			return o.lab(os.Stderr).ExecIn(cmd.Context(), args[0], args[1], args[2:], os.Stdin, os.Stdout, os.Stderr)
		},
	}
}

func newLabLoadImageCmd(o *labOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "load-image TARBALL...",
		Short: "Load image tarballs into every node of the lab (as kind load image-archive)",
		Long: `load-image imports each image tarball into the containerd of every real node of the
lab, so pods run it without a registry. After changing Strait's code:

  make image && strait lab load-image bin/images/straitd.tar bin/images/charon.tar
  kubectl --kubeconfig "$(strait lab kubeconfig c1 > c1.kubeconfig; echo c1.kubeconfig)" \
    -n strait-system rollout restart daemonset/strait-agent`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireRootCmd(); err != nil {
				return err
			}
			return o.lab(os.Stdout).LoadImages(cmd.Context(), args...)
		},
	}
}

func newLabServeCmd(o *labOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "serve",
		Short:  "The lab daemon (started by lab up): loopback forwarders, Corefile sync",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return o.lab(os.Stderr).Serve(ctx)
		},
	}
}
