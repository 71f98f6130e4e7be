package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/topology"
)

// UpOptions are what "lab up" brings up.
type UpOptions struct {
	Spec topology.Spec
	// ClusterSet is the manifest's content.
	ClusterSet []byte
	// Timeout bounds the wait for every sample pod to be ready.
	Timeout time.Duration
}

// Up brings the lab up, or completes a lab that is partly up (after a crash, or when run
// again). A lab with a different spec must be taken down first.
func (l *Lab) Up(ctx context.Context, o UpOptions) error {
	if err := checkHostTools(); err != nil {
		return err
	}
	if err := keepInheritedFromChildren(); err != nil {
		return err
	}
	ctx, stop := l.watchComponents(ctx)
	defer stop()
	return exitCause(ctx, l.up(ctx, o))
}

func (l *Lab) up(ctx context.Context, o UpOptions) error {
	start := time.Now()
	rec := &Record{Spec: o.Spec, ClusterSet: o.ClusterSet, PortBase: l.opts.PortBase}
	if old, err := l.state.ReadRecord(); err == nil {
		a, _ := json.Marshal(old.Spec)
		b, _ := json.Marshal(rec.Spec)
		if !bytes.Equal(a, b) || !bytes.Equal(old.ClusterSet, rec.ClusterSet) {
			return fmt.Errorf("a different lab is up (state %s): run 'strait lab down' first", l.state.Dir)
		}
		rec.PortBase = old.PortBase
		rec.Networks = old.Networks
	}
	nets, err := chooseNetworks(rec)
	if err != nil {
		return err
	}
	rec.Networks = nets
	t, err := computeTopology(rec)
	if err != nil {
		return err
	}
	if lo, hi, err := ephemeralPorts(); err == nil {
		if err := checkHostPorts(rec.PortBase, len(t.ControlPlanes()), lo, hi); err != nil {
			return err
		}
	}
	for _, bin := range []string{l.opts.bin("etcd"), l.opts.bin("kube-apiserver"), l.opts.bin("kube-proxy"), l.opts.CoreDNS} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("missing binary %s (make k8s-binaries coredns): %w", bin, err)
		}
	}
	var hubImgs []string
	if t.Hub != nil {
		if hubImgs, err = hubImages(l.gitOpsOf(o.Spec, t)); err != nil {
			return err
		}
	}
	if err := l.opts.checkNodeArtifacts(t, o.Spec.SampleWorkloads, hubImgs); err != nil {
		return err
	}
	if o.Spec.Monitoring {
		if t.Hub == nil {
			return errors.New("monitoring: a lab without a hub has no Prometheus to federate into; set hub: true")
		}
		if _, err := os.Stat(l.opts.Prometheus); err != nil || l.opts.Prometheus == "" {
			return fmt.Errorf("monitoring: missing the prometheus binary %q (make prometheus-binaries): %w", l.opts.Prometheus, err)
		}
	}
	if err := l.state.WriteRecord(rec); err != nil {
		return err
	}
	l.progress("network: %d namespaces; LANs in %s, WAN %s, internet %s", len(t.Namespaces()), nets.LAN, nets.WAN, nets.Internet)
	if err := ensureNetwork(ctx, t); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	if t.HostLink != nil {
		l.progress("host: %s routes %s into the lab", t.HostLink.Name, prefixList(t.HostLink.Routes))
	}
	// The nodes' containerd and images need no API server: they start with the control
	// planes, and each kubelet once its API server answers.
	prepared, err := l.prepareNodes(ctx, t, o.Spec.SampleWorkloads)
	defer prepared()
	if err != nil {
		return err
	}
	l.progress("control planes: %d (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)", len(t.ControlPlanes()))
	if err := l.eachControlPlane(t, func(cp topology.ControlPlane) error {
		c := controlPlane{cp: cp, hostPort: rec.hostPort(t, cp.Cluster)}
		if m, ok := t.Cluster(cp.Cluster); ok {
			c.serviceCIDR, c.apiService = m.ServiceCIDR, m.APIServiceIP
			c.serviceCIDR6 = m.ServiceCIDR6
		} else {
			c.serviceCIDR = t.HubServiceCIDR
			c.apiService = c.serviceCIDR.Addr().Next()
		}
		if err := l.ensureControlPlane(ctx, c); err != nil {
			return err
		}
		l.progress("%s: API server ready (%.1fs)", cp.Cluster, time.Since(start).Seconds())
		return nil
	}); err != nil {
		return err
	}
	var head string
	if t.Hub != nil {
		if head, err = l.ensureRepo(ctx, t, rec); err != nil {
			return fmt.Errorf("clusterset repo: %w", err)
		}
	}
	if err := l.ensureProcess(daemonKey, "daemon", "", l.opts.Strait, "lab", "serve", "--state", l.state.Dir); err != nil {
		return err
	}
	l.progress("lab daemon: forwarders on 127.0.0.1:%d-%d, git server on 127.0.0.1:%d", rec.PortBase, rec.PortBase+len(t.Clusters), rec.gitHostPort())
	if err := l.eachControlPlane(t, func(cp topology.ControlPlane) error {
		return l.bootstrap(ctx, t, rec, cp, o)
	}); err != nil {
		return err
	}
	if err := l.eachControlPlane(t, func(cp topology.ControlPlane) error {
		if o.Spec.IsUnjoined(cp.Cluster) {
			return nil
		}
		client, err := l.clientset(cp)
		if err != nil {
			return err
		}
		return l.waitStrait(ctx, cp.Cluster, client, o.timeout())
	}); err != nil {
		return err
	}
	monitoringReady := func() error { return nil }
	if o.Spec.Monitoring && t.Hub != nil {
		done := make(chan error, 1)
		go func() { done <- l.upMonitoring(ctx, t, rec, o) }()
		monitoringReady = func() error { return <-done }
	}
	// Flux says Ready on its next health check, up to 5 s after the ClusterSet is (Argo
	// CD on its next refresh): the members' checks go on from the apply, and ready waits
	// for both.
	syncReady := func() error { return nil }
	if t.Hub != nil {
		synced := time.Now()
		s, err := l.WaitApplied(ctx, head, o.timeout())
		if err != nil {
			return err
		}
		l.progress("hub: %s applied %s, ClusterSet Ready (%.1fs after Strait was up in every cluster)", o.Spec.SyncsWith(), s.Applied, time.Since(synced).Seconds())
		done := make(chan error, 1)
		go func() {
			s, err := l.WaitSynced(ctx, head, o.timeout())
			if err == nil {
				err = l.settleGitOps(ctx, t, o)
			}
			if err == nil {
				l.progress("hub: %s Ready (%.1fs after Strait was up in every cluster)", s.Object, time.Since(synced).Seconds())
			}
			done <- err
		}()
		syncReady = func() error { return <-done }
	}
	if o.Spec.SampleWorkloads {
		timeout := o.timeout()
		if err := l.eachControlPlane(t, func(cp topology.ControlPlane) error {
			if cp.Cluster == topology.HubName {
				return nil
			}
			if err := l.waitPodsReady(ctx, cp, timeout); err != nil {
				return err
			}
			c, _ := t.Cluster(cp.Cluster)
			if err := l.waitServices(ctx, *c, timeout); err != nil {
				return err
			}
			if o.Spec.IsUnjoined(c.Name) {
				return nil // no strait dns to answer until strait join --install
			}
			return l.waitClustersetDNS(ctx, *c, timeout)
		}); err != nil {
			return err
		}
	}
	if t.Hub != nil {
		if err := l.eachControlPlane(t, func(cp topology.ControlPlane) error {
			c, ok := t.Cluster(cp.Cluster)
			if !ok || o.Spec.IsUnjoined(c.Name) {
				return nil
			}
			return l.WaitPeersConnected(ctx, *c, joinedOthers(t, o.Spec.Unjoined, c.Name), o.timeout())
		}); err != nil {
			return err
		}
	}
	if err := syncReady(); err != nil {
		return err
	}
	if err := monitoringReady(); err != nil {
		return err
	}
	l.progress("ready in %.1fs", time.Since(start).Seconds())
	return nil
}

// settleGitOps waits for the GitOps controller's workloads its first sync did not need.
func (l *Lab) settleGitOps(ctx context.Context, t *topology.Lab, o UpOptions) error {
	client, err := l.clientset(*t.Hub)
	if err != nil {
		return err
	}
	return l.gitOpsOf(o.Spec, t).settle(ctx, client, o.timeout())
}

// eachControlPlane runs fn for every control plane at once and joins the errors.
func (l *Lab) eachControlPlane(t *topology.Lab, fn func(topology.ControlPlane) error) error {
	cps := t.ControlPlanes()
	errs := make([]error, len(cps))
	var wg sync.WaitGroup
	for i, cp := range cps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(cp)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// bootstrap installs what a cluster needs beyond its control plane: CRDs; on members the
// cluster DNS, kube-proxy and the sample workloads; on the hub the ClusterSet and the
// members' kubeconfig Secrets.
func (l *Lab) bootstrap(ctx context.Context, t *topology.Lab, rec *Record, cp topology.ControlPlane, o UpOptions) error {
	cfg, err := l.inNamespaceConfig(cp.Cluster, cp.Namespace)()
	if err != nil {
		return err
	}
	a, err := newApplier(cfg)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	member := cp.Cluster != topology.HubName
	// The GitOps controllers are applied beside Strait's install, before the hub's node
	// and the members' tokens the hub's Secrets wait for: their pods then start as soon
	// as the node is Ready (after those waits Flux's were the hub's last 4-7 s).
	fluxApplied := make(chan error, 1)
	fluxStart := time.Now()
	g := l.gitOpsOf(o.Spec, t)
	if !member {
		go func() { fluxApplied <- g.install(ctx) }()
	}
	if err := l.writeInstallOverlay(cp.Cluster, member, o.Spec.Monitoring, o.Spec.GatewayLease); err != nil {
		return err
	}
	if o.Spec.Monitoring {
		if err := ensureMonitoringCRDs(ctx, a, o.timeout()); err != nil {
			return fmt.Errorf("%s: monitoring CRDs: %w", cp.Cluster, err)
		}
	}
	if o.Spec.IsUnjoined(cp.Cluster) {
		l.progress("%s: unjoined, Strait not installed (strait join --install %s installs it)", cp.Cluster, l.InstallDir(cp.Cluster))
	} else {
		if err := l.installStrait(ctx, cp.Cluster); err != nil {
			return err
		}
		l.progress("%s: strait installed (kubectl apply --server-side -k %s)", cp.Cluster, l.InstallDir(cp.Cluster))
	}
	if !member {
		if err := l.ensureHubNode(ctx, t, client); err != nil {
			return fmt.Errorf("hub node: %w", err)
		}
		if err := l.ensureKubeProxyOn(topology.HubName, *t.HubNode, l.state.InNamespaceKubeconfig(topology.HubName), []netip.Prefix{t.HubNode.PodCIDR}, topology.KubeProxyNFTables); err != nil {
			return fmt.Errorf("hub kube-proxy: %w", err)
		}
		if err := l.ensureClusterDNS(ctx, *t.Hub, t.HubDNSServiceIP(), client); err != nil {
			return fmt.Errorf("hub DNS: %w", err)
		}
		return l.bootstrapHub(ctx, t, rec, client, g, fluxApplied, fluxStart, o.timeout())
	}
	c, _ := t.Cluster(cp.Cluster)
	if err := l.ensureClusterDNS(ctx, c.ControlPlane, c.DNSServiceIP, client); err != nil {
		return fmt.Errorf("%s DNS: %w", c.Name, err)
	}
	if err := l.ensureKubeProxy(*c); err != nil {
		return fmt.Errorf("%s kube-proxy: %w", c.Name, err)
	}
	l.progress("%s: CoreDNS at %s, kube-proxy (%s) on %d nodes; %s", c.Name, c.DNSServiceIP, c.Shape.KubeProxyMode, len(c.Nodes), c.Shape)
	flannelOn, nftables := flannelOf(*c)
	if flannelOn {
		// Before the nodes: each node's flanneld starts as soon as its kubelet does, and
		// no pod of the pod network gets an address before flanneld wrote its subnet.
		if err := l.ensureFlannel(ctx, a, *c, nftables); err != nil {
			return fmt.Errorf("%s flannel: %w", c.Name, err)
		}
	}
	if err := l.ensureRealNodes(ctx, *c, client, o.Spec.SampleWorkloads); err != nil {
		return fmt.Errorf("%s nodes: %w", c.Name, err)
	}
	if o.Spec.SampleWorkloads {
		var errs []error
		for _, obj := range sampleObjects(c.Name) {
			errs = append(errs, a.create(ctx, obj))
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("%s sample workloads: %w", c.Name, err)
		}
	}
	if flannelOn {
		return l.waitFlannel(ctx, c.Name, client, o.timeout())
	}
	return nil
}

// bootstrapHub creates in the hub what a user creates out of band, before the ClusterSet
// syncs (the members' kubeconfig Secrets, the PSK), waits for strait hub and the GitOps
// controller g installed, and points g at the lab's repo: the ClusterSet comes from git.
func (l *Lab) bootstrapHub(ctx context.Context, t *topology.Lab, rec *Record, client kubernetes.Interface,
	g gitOps, fluxApplied <-chan error, fluxStart time.Time, timeout time.Duration) error {
	committed, err := rec.JoinedClusterSet()
	if err != nil {
		return err
	}
	if err := l.hubSecrets(ctx, t, client, committed, timeout); err != nil {
		return fmt.Errorf("hub secrets: %w", err)
	}
	// The GitOps controllers roll out beside strait hub; the sync is wired once strait
	// hub (its webhook) is ready, so that the first apply is judged, not refused.
	if err := <-fluxApplied; err != nil {
		return fmt.Errorf("%s: %w", rec.Spec.SyncsWith(), err)
	}
	if err := l.waitStrait(ctx, topology.HubName, client, timeout); err != nil {
		return err
	}
	return g.start(ctx, client, fluxStart, timeout)
}

// waitPodsReady waits until every sample pod of a member is Ready.
func (l *Lab) waitPodsReady(ctx context.Context, cp topology.ControlPlane, timeout time.Duration) error {
	client, err := l.clientset(cp)
	if err != nil {
		return err
	}
	want := 6 // whereami-cs ×2, whereami ×2, client, iperf3
	deadline := time.Now().Add(timeout)
	for {
		pods, err := client.CoreV1().Pods(SampleNamespace).List(ctx, metav1.ListOptions{})
		ready := 0
		if err == nil {
			for _, p := range pods.Items {
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
						ready++
					}
				}
			}
		}
		if ready >= want {
			l.progress("%s: %d sample pods ready", cp.Cluster, ready)
			return nil
		}
		if time.Now().After(deadline) {
			var why string
			if pods != nil {
				why = notReady(pods.Items)
			}
			return fmt.Errorf("%s: %d of %d sample pods ready after %s (logs: %s)%s", cp.Cluster, ready, want, timeout,
				filepath.Join(l.state.ClusterDir(cp.Cluster), "logs"), why)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (o UpOptions) timeout() time.Duration {
	if o.Timeout == 0 {
		return 3 * time.Minute
	}
	return o.Timeout
}

// clientset is a client of a cluster's API server from inside its control plane's
// namespace.
func (l *Lab) clientset(cp topology.ControlPlane) (kubernetes.Interface, error) {
	cfg, err := l.inNamespaceConfig(cp.Cluster, cp.Namespace)()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// waitServices waits until every node reaches every sample Service and the cluster DNS
// on its ClusterIP over TCP, which means kube-proxy has programmed them. The Services
// the hub derives for clusterset IPs are left out.
func (l *Lab) waitServices(ctx context.Context, c topology.Cluster, timeout time.Duration) error {
	client, err := l.clientset(c.ControlPlane)
	if err != nil {
		return err
	}
	var targets []string
	for _, ns := range []string{SampleNamespace, "kube-system"} {
		svcs, err := client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, s := range svcs.Items {
			// A Service Strait derived for a clusterset IP leads to other clusters too,
			// which a node's own address does not reach: it is not the cluster's to check.
			if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone || s.Labels[straitv1.LabelServiceImport] != "" {
				continue
			}
			for _, p := range s.Spec.Ports {
				if p.Protocol == corev1.ProtocolTCP {
					targets = append(targets, net.JoinHostPort(s.Spec.ClusterIP, strconv.Itoa(int(p.Port))))
				}
			}
		}
	}
	deadline := time.Now().Add(timeout)
	for _, n := range c.Nodes {
		for _, target := range targets {
			for {
				dctx, cancel := context.WithTimeout(ctx, time.Second)
				conn, err := netns.Dial(dctx, n.Namespace, "tcp", target)
				cancel()
				if err == nil {
					_ = conn.Close()
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("%s: node %s cannot reach Service %s: %w (kube-proxy log: %s)", c.Name, n.Name, target, err,
						l.state.LogPath(c.Name, "kube-proxy-"+n.Name))
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
	}
	l.progress("%s: %d Service ports reachable through kube-proxy from every node", c.Name, len(targets))
	return nil
}
