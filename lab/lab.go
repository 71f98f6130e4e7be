package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/hostnet"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/plan"
)

// Options say where things are.
type Options struct {
	// StateDir keeps pids, certificates, kubeconfigs, logs and etcd data.
	StateDir string
	// K8sBin holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
	// kube-proxy.
	K8sBin string
	// CoreDNS is the coredns binary.
	CoreDNS string
	// Strait is the strait binary the lab runs as its daemon (strait lab serve).
	Strait string
	// NodeBin holds containerd, its shim, ctr, runc and the CNI plugins (make
	// node-binaries); the kubelet is in K8sBin.
	NodeBin string
	// ImageDir holds the image tarballs real nodes import (make images, make image).
	ImageDir string
	// Seeds keeps, per set of images a node imports, the containerd root one node made
	// by importing them, which the next nodes of the set start from (lab/node's seeds).
	// Default: ImageDir/seeds. It outlives the lab, as the images do.
	Seeds string
	// Kustomize is Strait's kustomize directory (hub, member, crd): the lab installs
	// from it as users do.
	Kustomize string
	// Prometheus is the prometheus binary a lab with monitoring runs (make
	// prometheus-binaries).
	Prometheus string
	// PortBase is the host loopback port of the first control plane's forwarder.
	PortBase int
	// Out receives progress lines.
	Out io.Writer
}

func (o Options) bin(name string) string { return filepath.Join(o.K8sBin, name) }

// Lab drives one lab on this machine.
type Lab struct {
	opts  Options
	state State
	// mu guards the progress output and early.
	mu sync.Mutex
	// early are the real nodes "up" prepares while the control planes come up.
	early map[string]*early
}

// New returns a Lab; nothing is touched until a method is called.
func New(opts Options) *Lab {
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir
	}
	if opts.PortBase == 0 {
		opts.PortBase = 16443
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Seeds == "" && opts.ImageDir != "" {
		opts.Seeds = filepath.Join(opts.ImageDir, "seeds")
	}
	// Absolute, as `--k8s-bin bin/k8s/v1.37.1` means from where it was typed: the lab's
	// processes start in other directories (the kubelet refused a relative path after the
	// control planes had come up).
	for _, p := range []*string{&opts.StateDir, &opts.K8sBin, &opts.CoreDNS, &opts.Strait, &opts.NodeBin, &opts.ImageDir, &opts.Seeds, &opts.Kustomize, &opts.Prometheus} {
		if *p != "" {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs
			}
		}
	}
	return &Lab{opts: opts, state: State{Dir: opts.StateDir}}
}

// State is the lab's state directory.
func (l *Lab) State() State { return l.state }

func (l *Lab) progress(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.opts.Out, "  "+format+"\n", args...)
}

// Load reads the running lab's record and recomputes its topology.
func (l *Lab) Load() (*Record, *topology.Lab, error) {
	r, err := l.state.ReadRecord()
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("no lab is up (no %s): %w", filepath.Join(l.state.Dir, "lab.json"), err)
		}
		return nil, nil, err
	}
	t, err := computeTopology(r)
	return r, t, err
}

func computeTopology(r *Record) (*topology.Lab, error) {
	cs, err := plan.Parse(r.ClusterSet)
	if err != nil {
		return nil, err
	}
	spec := r.Spec
	if r.Networks != (topology.Networks{}) {
		spec.Networks = r.Networks
	}
	t, errs := topology.Compute(cs, spec)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return t, nil
}

// chooseNetworks picks the lab's networks clear of the host's routes, addresses and
// resolvers: those the running lab recorded, else those the lab file pins, the others
// from topology's candidates. The lab's own link on the host is no host range.
func chooseNetworks(r *Record) (topology.Networks, error) {
	cs, err := plan.Parse(r.ClusterSet)
	if err != nil {
		return topology.Networks{}, err
	}
	host, err := hostnet.Ranges(topology.HostLinkName)
	if err != nil {
		return topology.Networks{}, err
	}
	pins := r.Spec.Networks
	if r.Networks != (topology.Networks{}) {
		pins = r.Networks
	}
	nets, errs := topology.ChooseNetworks(cs, pins, host, r.Spec.HasIPv6())
	if len(errs) > 0 {
		return nets, fmt.Errorf("the lab's ranges and this host's network: %w", errs.ToAggregate())
	}
	return nets, nil
}

// hostPort is the forwarder port of a control plane.
func (r *Record) hostPort(t *topology.Lab, cluster string) int {
	if cluster == topology.HubName {
		return r.PortBase
	}
	c, _ := t.Cluster(cluster)
	return r.PortBase + 1 + c.Index
}

// ensureNetwork creates every namespace, bridge, veth, address and route of the lab,
// then the host's link into it.
func ensureNetwork(ctx context.Context, t *topology.Lab) error {
	for _, ns := range t.Namespaces() {
		if err := netns.Ensure(ctx, ns); err != nil {
			return err
		}
		if t.IPv6Range.IsValid() {
			if err := ensureIPv6Forwarding(ns); err != nil {
				return fmt.Errorf("namespace %s: %w", ns, err)
			}
		}
	}
	if t.Hub != nil {
		if err := netns.IP(ctx, "-n", t.Hub.Namespace, "addr", "replace", t.Hub.LANAddr.String(), "dev", "lo"); err != nil {
			return err
		}
	}
	if t.Internet != nil {
		if err := netns.EnsureBridge(ctx, topology.WANNamespace, topology.BridgeName); err != nil {
			return err
		}
		if err := netns.IP(ctx, "-n", t.Internet.Namespace, "addr", "replace", netip.PrefixFrom(t.Internet.Addr, 32).String(), "dev", "lo"); err != nil {
			return err
		}
		if t.Internet.Addr6.IsValid() {
			if err := netns.IP(ctx, "-n", t.Internet.Namespace, "addr", "replace", netip.PrefixFrom(t.Internet.Addr6, 128).String(), "dev", "lo"); err != nil {
				return err
			}
		}
		if err := ensureLinks(ctx, t.Links); err != nil {
			return err
		}
	}
	for _, c := range t.Clusters {
		if err := netns.EnsureBridge(ctx, c.LANNamespace, topology.BridgeName); err != nil {
			return err
		}
		if err := ensureLinks(ctx, c.Links); err != nil {
			return err
		}
		errs := []error{ensureRoutes(ctx, c.Router.Namespace, c.Router.Routes), ensureRoutes(ctx, c.ControlPlane.Namespace, c.ControlPlane.Routes)}
		for _, n := range c.Nodes {
			errs = append(errs, ensureRoutes(ctx, n.Namespace, n.Routes))
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("cluster %s routes: %w", c.Name, err)
		}
		if err := ensureCNIMasquerade(ctx, c); err != nil {
			return err
		}
		if err := ensureRouterNAT(ctx, c.Router); err != nil {
			return fmt.Errorf("cluster %s's router: %w", c.Name, err)
		}
	}
	// The hub's and the internet's routes lead through the members' LANs and routers.
	if t.Hub != nil {
		if err := ensureRoutes(ctx, t.Hub.Namespace, t.Hub.Routes); err != nil {
			return fmt.Errorf("hub routes: %w", err)
		}
	}
	if t.Internet != nil {
		if err := ensureRoutes(ctx, t.Internet.Namespace, t.Internet.Routes); err != nil {
			return fmt.Errorf("internet routes: %w", err)
		}
		if script := t.Internet.FenceRuleset(); script != "" {
			if err := runIn(ctx, t.Internet.Namespace, script, "nft", "-f", "-"); err != nil {
				return fmt.Errorf("table %s: %w", topology.InternetTable, err)
			}
		}
	}
	if t.HostLink != nil {
		if err := hostnet.Ensure(*t.HostLink); err != nil {
			return err
		}
	}
	return nil
}

func ensureLinks(ctx context.Context, links []topology.Link) error {
	for _, k := range links {
		v := netns.VethPair{NS: k.Namespace, Name: k.Name, Addr: k.Addr, PeerNS: k.PeerNamespace, Peer: k.Peer}
		if k.PeerBridge {
			v.PeerMaster = topology.BridgeName
		}
		if err := netns.EnsureVeth(ctx, v); err != nil {
			return err
		}
		// nodad: a tentative address would neither send nor answer for a second or two
		// after every lab up.
		if k.Addr6.IsValid() {
			if err := netns.IP(ctx, "-n", k.Namespace, "addr", "replace", k.Addr6.String(), "dev", k.Name, "nodad"); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureIPv6Forwarding makes a namespace of a dual-stack lab route IPv6 as it routes
// IPv4, and skip duplicate address detection on the links it gets later (the pods'
// veths and bridges too), so no address waits tentative.
func ensureIPv6Forwarding(ns string) error {
	return errors.Join(
		netns.Sysctl(ns, "net/ipv6/conf/all/forwarding", "1"),
		netns.Sysctl(ns, "net/ipv6/conf/default/accept_dad", "0"),
		netns.Sysctl(ns, "net/ipv6/conf/all/accept_dad", "0"),
	)
}

func ensureRoutes(ctx context.Context, ns string, routes []topology.Route) error {
	var errs []error
	for _, r := range routes {
		errs = append(errs, netns.ReplaceRoute(ctx, ns, r.Dst, r.Via, ""))
	}
	return errors.Join(errs...)
}

func prefixList(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, " ")
}
