package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/netns"
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
	// Strait is the people's strait binary: the lab daemon (strait lab serve) and the
	// the lab daemon (strait lab serve).
	Strait string
	// NodeBin holds containerd, its shim, ctr, runc and the CNI plugins (make
	// node-binaries); the kubelet is in K8sBin.
	NodeBin string
	// ImageDir holds the image tarballs real nodes import (make images, make image).
	ImageDir string
	// Kustomize is Strait's kustomize directory (hub, member, crd): the lab installs
	// from it as users do.
	Kustomize string
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
	mu    sync.Mutex
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
	t, errs := topology.Compute(cs, r.Spec)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return t, nil
}

// hostPort is the forwarder port of a control plane.
func (r *Record) hostPort(t *topology.Lab, cluster string) int {
	if cluster == topology.HubName {
		return r.PortBase
	}
	c, _ := t.Cluster(cluster)
	return r.PortBase + 1 + c.Index
}

// ensureNetwork creates every namespace, bridge, veth, address and route of the lab.
func ensureNetwork(ctx context.Context, t *topology.Lab) error {
	for _, ns := range t.Namespaces() {
		if err := netns.Ensure(ctx, ns); err != nil {
			return err
		}
	}
	if t.Hub != nil {
		if err := netns.IP(ctx, "-n", t.Hub.Namespace, "addr", "replace", t.Hub.LANAddr.String(), "dev", "lo"); err != nil {
			return err
		}
	}
	if t.HasWAN() {
		if err := netns.EnsureBridge(ctx, topology.WANNamespace, topology.BridgeName); err != nil {
			return err
		}
	}
	for _, c := range t.Clusters {
		if err := netns.EnsureBridge(ctx, c.LANNamespace, topology.BridgeName); err != nil {
			return err
		}
		for _, k := range c.Links {
			v := netns.VethPair{NS: k.Namespace, Name: k.Name, Addr: k.Addr, PeerNS: k.PeerNamespace, Peer: k.Peer}
			if k.PeerBridge {
				v.PeerMaster = topology.BridgeName
			}
			if err := netns.EnsureVeth(ctx, v); err != nil {
				return err
			}
		}
		var errs []error
		for _, r := range c.ControlPlane.Routes {
			errs = append(errs, netns.ReplaceRoute(ctx, c.ControlPlane.Namespace, r.Dst, r.Via, ""))
		}
		for _, n := range c.Nodes {
			for _, r := range n.Routes {
				errs = append(errs, netns.ReplaceRoute(ctx, n.Namespace, r.Dst, r.Via, ""))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("cluster %s routes: %w", c.Name, err)
		}
		if err := ensureCNIMasquerade(ctx, c); err != nil {
			return err
		}
	}
	return nil
}
