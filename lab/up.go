package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/nodeagent/cable/ipsec"
	"github.com/straitnet/strait/test/netns"
)

// UpOptions are what "lab up" brings up.
type UpOptions struct {
	Spec topology.Spec
	// ClusterSet is the manifest's content.
	ClusterSet []byte
	// CRDDirs hold CRD manifests applied to every control plane (the hub's and members').
	CRDDirs []string
	// WebhookManifest is the file of the hub's ValidatingWebhookConfiguration (applied
	// when strait hub runs); empty for none.
	WebhookManifest string
	// Timeout bounds the wait for every sample pod to be ready.
	Timeout time.Duration
}

// Up brings the lab up, or completes a lab that is partly up (after a crash, or when run
// again). A lab with a different spec must be taken down first.
func (l *Lab) Up(ctx context.Context, o UpOptions) error {
	if err := checkHostTools(); err != nil {
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
	}
	t, err := computeTopology(rec)
	if err != nil {
		return err
	}
	for _, bin := range []string{l.opts.bin("etcd"), l.opts.bin("kube-apiserver"), l.opts.bin("kube-proxy"), l.opts.CoreDNS} {
		if _, err := os.Stat(bin); err != nil {
			return fmt.Errorf("missing binary %s (make k8s-binaries coredns): %w", bin, err)
		}
	}
	if err := l.state.WriteRecord(rec); err != nil {
		return err
	}
	l.progress("network: %d namespaces", len(t.Namespaces()))
	if err := ensureNetwork(ctx, t); err != nil {
		return fmt.Errorf("network: %w", err)
	}
	l.progress("control planes: %d (etcd, kube-apiserver, kube-controller-manager, kube-scheduler)", len(t.ControlPlanes()))
	if err := l.eachControlPlane(t, func(cp topology.ControlPlane) error {
		c := controlPlane{cp: cp, hostPort: rec.hostPort(t, cp.Cluster)}
		if m, ok := t.Cluster(cp.Cluster); ok {
			c.serviceCIDR, c.apiService = m.ServiceCIDR, m.APIServiceIP
		}
		if err := l.ensureControlPlane(ctx, c); err != nil {
			return err
		}
		l.progress("%s: API server ready (%.1fs)", cp.Cluster, time.Since(start).Seconds())
		return nil
	}); err != nil {
		return err
	}
	if err := l.ensureProcess(daemonKey, "daemon", "", l.opts.Strait, "lab", "serve", "--state", l.state.Dir); err != nil {
		return err
	}
	l.progress("lab daemon: forwarders on 127.0.0.1:%d-%d, kubelets on %d nodes", rec.PortBase, rec.PortBase+len(t.Clusters), nodeCount(t))
	if err := l.eachControlPlane(t, func(cp topology.ControlPlane) error {
		return l.bootstrap(ctx, t, rec, cp, o)
	}); err != nil {
		return err
	}
	l.startStrait(ctx, t, o.WebhookManifest)
	if o.Spec.SampleWorkloads {
		timeout := o.Timeout
		if timeout == 0 {
			timeout = 3 * time.Minute
		}
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
			if !l.StraitdSupports("dns") {
				return nil
			}
			return l.waitClustersetDNS(ctx, *c, timeout)
		}); err != nil {
			return err
		}
	}
	l.progress("ready in %.1fs", time.Since(start).Seconds())
	return nil
}

func nodeCount(t *topology.Lab) int {
	n := 0
	for _, c := range t.Clusters {
		n += len(c.Nodes)
	}
	return n
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
	if err := applyManifests(ctx, a, o.CRDDirs...); err != nil {
		return fmt.Errorf("%s CRDs: %w", cp.Cluster, err)
	}
	if cp.Cluster == topology.HubName {
		return l.bootstrapHub(ctx, t, rec, a)
	}
	c, _ := t.Cluster(cp.Cluster)
	if err := l.ensureClusterDNS(ctx, *c, client); err != nil {
		return fmt.Errorf("%s DNS: %w", c.Name, err)
	}
	if err := l.ensureKubeProxy(*c); err != nil {
		return fmt.Errorf("%s kube-proxy: %w", c.Name, err)
	}
	l.progress("%s: CoreDNS at %s, kube-proxy (nftables) on %d nodes", c.Name, c.DNSServiceIP, len(c.Nodes))
	if o.Spec.SampleWorkloads {
		var errs []error
		for _, obj := range sampleObjects() {
			errs = append(errs, a.create(ctx, obj))
		}
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("%s sample workloads: %w", c.Name, err)
		}
	}
	return nil
}

// bootstrapHub applies the ClusterSet and a kubeconfig Secret per member (reaching the
// member's API server at its LAN address, where strait hub runs: in the hub's namespace).
func (l *Lab) bootstrapHub(ctx context.Context, t *topology.Lab, rec *Record, a *applier) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "strait-system"}}
	errs := []error{a.create(ctx, ns)}
	for _, c := range t.Clusters {
		// strait hub runs in the hub's namespace, on every member's LAN.
		kc, err := os.ReadFile(l.state.LANKubeconfig(c.Name))
		if err != nil {
			// Members write theirs concurrently; wait briefly.
			time.Sleep(time.Second)
			if kc, err = os.ReadFile(l.state.LANKubeconfig(c.Name)); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		errs = append(errs, a.create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: c.Name + "-kubeconfig", Namespace: "strait-system"},
			Data:       map[string][]byte{"value": kc, "value.yaml": kc},
		}))
	}
	errs = append(errs, a.createYAML(ctx, rec.ClusterSet))
	return errors.Join(errs...)
}

// waitPodsReady waits until every sample pod of a member is Ready.
func (l *Lab) waitPodsReady(ctx context.Context, cp topology.ControlPlane, timeout time.Duration) error {
	cfg, err := l.inNamespaceConfig(cp.Cluster, cp.Namespace)()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
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

// StraitdSupports says whether the straitd binary has a subcommand (a lab can run with
// only the control planes while a daemon is being written).
func (l *Lab) StraitdSupports(sub string) bool {
	return l.opts.Straitd != "" && exec.Command(l.opts.Straitd, sub, "--help").Run() == nil
}

// startStrait starts straitd hub in the hub's namespace (it reaches the members over
// their LANs and serves its webhook to the hub's API server), straitd agent in every
// node's namespace and straitd dns next to CoreDNS in every member's control-plane
// namespace, where the binary has those subcommands.
func (l *Lab) startStrait(ctx context.Context, t *topology.Lab, webhookManifest string) {
	hub := t.Hub != nil && l.StraitdSupports("hub")
	if hub {
		// The webhook configuration first: strait hub injects its CA bundle into it at
		// start and exits when it is missing.
		if err := l.ensureHubWebhook(ctx, t, webhookManifest); err != nil {
			l.progress("hub: webhook: %v", err)
		} else if err := l.ensureProcess(topology.HubName, "strait-hub", t.Hub.Namespace, l.opts.Straitd, "hub",
			"--kubeconfig", l.state.InNamespaceKubeconfig(topology.HubName), "--leader-elect=false", "--log-json=false",
			"--health-probe-bind-address", "127.0.0.1:8081", "--metrics-bind-address", "127.0.0.1:8080",
			"--webhook-certs", "self", "--webhook-cert-dir", filepath.Join(l.state.ClusterDir(topology.HubName), "webhook")); err != nil {
			l.progress("hub: straitd hub: %v", err)
		}
	}
	agent, dns := l.StraitdSupports("agent"), l.StraitdSupports("dns")
	// The ipsec cable's charon, where strongSwan is installed.
	_, noCharon := os.Stat(ipsec.CharonPath)
	charon := l.StraitdSupports("charon") && noCharon == nil
	for _, c := range t.Clusters {
		if agent {
			for _, n := range c.Nodes {
				args := []string{l.opts.Straitd, "agent", "--node-name", n.Name, "--kubeconfig", l.state.LANKubeconfig(c.Name)}
				if n.Gateway && charon {
					// strongSwan's charon for the ipsec cable, beside the agent as the
					// member DaemonSet's sidecar; it idles under the other drivers.
					// Userspace ESP: these kernels have no ESP.
					dir := l.state.CharonDir(c.Name, n.Name)
					if err := l.ensureProcess(c.Name, "strait-charon-"+n.Name, n.Namespace, l.opts.Straitd, "charon",
						"--dir", dir, "--port", strconv.Itoa(int(straitv1.DefaultIPsecPort)), "--libipsec"); err != nil {
						l.progress("%s: straitd charon: %v", n.Name, err)
					}
					args = append(args, "--vici-socket", filepath.Join(dir, "charon.vici"))
				}
				// wireguard-go's UAPI sockets live in /run/wireguard, shared by every
				// namespace: each agent gets a private one (ip netns exec has already
				// given it its own mount namespace, slave to the host's).
				if err := l.ensureProcess(c.Name, "strait-agent-"+n.Name, n.Namespace, append([]string{"sh", "-c",
					`mkdir -p /run/wireguard && mount -t tmpfs -o size=1m,mode=0700 strait-lab /run/wireguard && exec "$0" "$@"`},
					args...)...); err != nil {
					l.progress("%s: straitd agent: %v", n.Name, err)
				}
			}
		}
		if dns {
			// CoreDNS runs in the same namespace, so it forwards clusterset.local over loopback.
			if err := l.ensureProcess(c.Name, "strait-dns", c.ControlPlane.Namespace, l.opts.Straitd, "dns",
				"--kubeconfig", l.state.InNamespaceKubeconfig(c.Name), "--listen", "127.0.0.1:5353",
				"--upstream", "127.0.0.1:5353", "--metrics-addr", "127.0.0.1:9253"); err != nil {
				l.progress("%s: straitd dns: %v", c.Name, err)
			}
		}
	}
	l.progress("strait: hub %s, agent %s, dns %s, charon %s", onOff(hub), onOff(agent), onOff(dns), onOff(charon))
}

// ensureHubWebhook points the hub's ClusterSet webhook at strait hub in the hub's
// namespace: a selectorless Service with Endpoints at the hub's loopback address (the
// hub's API server resolves webhooks to endpoints: --enable-aggregator-routing).
func (l *Lab) ensureHubWebhook(ctx context.Context, t *topology.Lab, webhookManifest string) error {
	cfg, err := l.inNamespaceConfig(topology.HubName, t.Hub.Namespace)()
	if err != nil {
		return err
	}
	a, err := newApplier(cfg)
	if err != nil {
		return err
	}
	const name, ns = "strait-hub-webhook", "strait-system"
	errs := []error{
		a.create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "webhook", Port: 443, TargetPort: intstr.FromInt32(9443)}}}}),
		a.create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, //nolint:staticcheck // read by the API server's webhook resolver
			Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // as above
				Addresses: []corev1.EndpointAddress{{IP: t.Hub.LANAddr.Addr().String()}},
				Ports:     []corev1.EndpointPort{{Name: "webhook", Port: 9443}},
			}}}),
	}
	if webhookManifest != "" {
		data, err := os.ReadFile(webhookManifest)
		if err == nil {
			err = a.createYAML(ctx, data)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func onOff(b bool) string {
	if b {
		return "started"
	}
	return "not available in this strait binary"
}

// waitServices waits until every node reaches every sample Service and the cluster DNS
// on its ClusterIP over TCP, which means kube-proxy has programmed them.
func (l *Lab) waitServices(ctx context.Context, c topology.Cluster, timeout time.Duration) error {
	cfg, err := l.inNamespaceConfig(c.Name, c.ControlPlane.Namespace)()
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
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
			if s.Spec.ClusterIP == "" || s.Spec.ClusterIP == corev1.ClusterIPNone {
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
