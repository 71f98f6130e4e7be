package lab

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/internal/pki"
	"github.com/straitnet/strait/lab/topology"
)

// controlPlane is what one cluster's etcd and Kubernetes processes need.
type controlPlane struct {
	cp          topology.ControlPlane
	serviceCIDR netip.Prefix
	// serviceCIDR6 makes the cluster dual-stack: its Services may take an IPv6 ClusterIP
	// too (invalid in an IPv4 cluster). An IPv6-only cluster has serviceCIDR6 alone: its
	// API server advertises its IPv6 LAN address (kubernetes.default's endpoint) and
	// listens on both families (the hub and the host's forwarder reach it over IPv4).
	serviceCIDR6 netip.Prefix
	apiService   netip.Addr
	hostPort     int
}

// ensureControlPlane makes certificates and kubeconfigs, starts etcd and kube-apiserver
// unless they run, waits for the API server, then starts the controller manager and the
// scheduler.
func (l *Lab) ensureControlPlane(ctx context.Context, c controlPlane) error {
	name := c.cp.Cluster
	ips := []net.IP{net.IPv4(127, 0, 0, 1)}
	if c.cp.LANAddr.IsValid() {
		ips = append(ips, c.cp.LANAddr.Addr().AsSlice())
	}
	if c.cp.LANAddr6.IsValid() {
		ips = append(ips, c.cp.LANAddr6.Addr().AsSlice())
	}
	if c.apiService.IsValid() {
		ips = append(ips, c.apiService.AsSlice())
	}
	f, err := pki.EnsureControlPlane(l.state.PKI(name).Dir, ips, []string{"localhost", "kubernetes", "kubernetes.default",
		"kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return fmt.Errorf("%s certificates: %w", name, err)
	}
	if err := writeKubeconfig(l.state.InNamespaceKubeconfig(name), name, fmt.Sprintf("https://127.0.0.1:%d", topology.APIPort), f); err != nil {
		return err
	}
	if err := writeKubeconfig(l.state.KubeconfigPath(name), name, fmt.Sprintf("https://127.0.0.1:%d", c.hostPort), f); err != nil {
		return err
	}
	if c.cp.LANAddr.IsValid() {
		if err := writeKubeconfig(l.state.LANKubeconfig(name), name, fmt.Sprintf("https://%s:%d", c.cp.LANAddr.Addr(), topology.APIPort), f); err != nil {
			return err
		}
	}
	dir := l.state.ClusterDir(name)
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o700); err != nil {
		return err
	}
	var svcRanges []netip.Prefix
	for _, p := range []netip.Prefix{c.serviceCIDR, c.serviceCIDR6} {
		if p.IsValid() {
			svcRanges = append(svcRanges, p)
		}
	}
	svcRange := prefixesFlag(svcRanges)
	advertise, bind := "127.0.0.1", "0.0.0.0"
	switch v6only := !c.serviceCIDR.IsValid(); {
	case v6only && c.cp.LANAddr6.IsValid():
		advertise, bind = c.cp.LANAddr6.Addr().String(), "::"
	case c.cp.LANAddr.IsValid():
		advertise = c.cp.LANAddr.Addr().String()
	}
	kc := l.state.InNamespaceKubeconfig(name)
	if err := l.ensureProcess(name, "etcd", c.cp.Namespace, l.opts.bin("etcd"),
		"--name", name, "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", "http://127.0.0.1:2379", "--advertise-client-urls", "http://127.0.0.1:2379",
		"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
		"--initial-cluster", name+"=http://127.0.0.1:2380",
		"--unsafe-no-fsync", "--quota-backend-bytes", strconv.Itoa(2<<30), "--log-level", "warn"); err != nil {
		return err
	}
	// The hub resolves its webhook Service to endpoints: it has no kube-proxy.
	hubOnly := fmt.Sprintf("--enable-aggregator-routing=%v", name == topology.HubName)
	audit, err := l.auditFlags(name)
	if err != nil {
		return fmt.Errorf("%s audit policy: %w", name, err)
	}
	_, running := l.state.Pid(name, "kube-apiserver")
	started := time.Now()
	if err := l.ensureProcess(name, "kube-apiserver", c.cp.Namespace, append([]string{l.opts.bin("kube-apiserver"), hubOnly}, append(audit,
		"--etcd-servers", "http://127.0.0.1:2379",
		"--bind-address", bind, "--secure-port", strconv.Itoa(topology.APIPort), "--advertise-address", advertise,
		"--cert-dir", filepath.Join(dir, "apiserver"),
		"--tls-cert-file", f.ServingCert, "--tls-private-key-file", f.ServingKey, "--client-ca-file", f.CACert,
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", f.ServiceAccountKey, "--service-account-signing-key-file", f.ServiceAccountKey,
		"--service-cluster-ip-range", svcRange,
		"--authorization-mode", "RBAC", "--allow-privileged",
		"--enable-priority-and-fairness=false", "--profiling=false",
		"--endpoint-reconciler-type", "lease",
		// Real nodes' names resolve nowhere: logs, exec and port-forward go to their
		// InternalIP on the LAN.
		"--kubelet-preferred-address-types", "InternalIP")...)...); err != nil {
		return err
	}
	alive := func() bool { _, ok := l.state.Pid(name, "kube-apiserver"); return ok }
	if err := waitReady(ctx, l.inNamespaceConfig(name, c.cp.Namespace), alive, 90*time.Second); err != nil {
		return fmt.Errorf("%s API server: %w (log: %s)", name, err, l.state.LogPath(name, "kube-apiserver"))
	}
	if !running {
		if err := l.state.recordAPIServerStart(name, APIServerStart{Started: started, Ready: time.Now()}); err != nil {
			return err
		}
	}
	common := []string{"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--leader-elect=false", "--profiling=false"}
	if err := l.ensureProcess(name, "kube-controller-manager", c.cp.Namespace, append([]string{l.opts.bin("kube-controller-manager")}, append(common,
		"--service-account-private-key-file", f.ServiceAccountKey, "--root-ca-file", f.CACert,
		"--cluster-signing-cert-file", f.CACert, "--cluster-signing-key-file", f.CAKey,
		"--use-service-account-credentials=false", "--controllers", "*,-bootstrapsigner,-tokencleaner",
		"--service-cluster-ip-range", svcRange, "--secure-port", "10257")...)...); err != nil {
		return err
	}
	return l.ensureProcess(name, "kube-scheduler", c.cp.Namespace, append([]string{l.opts.bin("kube-scheduler")}, append(common, "--secure-port", "10259")...)...)
}

// ensureProcess starts argv in ns unless the recorded process still runs.
func (l *Lab) ensureProcess(cluster, name, ns string, argv ...string) error {
	if _, ok := l.state.Pid(cluster, name); ok {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(l.state.LogPath(cluster, name)), 0o700); err != nil {
		return err
	}
	pid, err := netns.Start(ns, l.state.LogPath(cluster, name), nil, argv...)
	if err != nil {
		return fmt.Errorf("%s %s: %w", cluster, name, err)
	}
	return l.state.WritePid(cluster, name, pid)
}

// inNamespaceConfig is a client config that dials the API server inside its namespace,
// so "up" needs no forwarder to talk to a control plane.
func (l *Lab) inNamespaceConfig(cluster, ns string) func() (*rest.Config, error) {
	return func() (*rest.Config, error) {
		cfg, err := clientcmd.BuildConfigFromFlags("", l.state.InNamespaceKubeconfig(cluster))
		if err != nil {
			return nil, err
		}
		cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return netns.Dial(ctx, ns, network, addr)
		}
		cfg.QPS, cfg.Burst = 100, 200
		return cfg, nil
	}
}

// waitReady polls /readyz until it answers ok.
func waitReady(ctx context.Context, config func() (*rest.Config, error), alive func() bool, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		cfg, err := config()
		if err == nil {
			cfg.Timeout = 2 * time.Second
			var cs *kubernetes.Clientset
			if cs, err = kubernetes.NewForConfig(cfg); err == nil {
				var body []byte
				body, err = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
				if err == nil && strings.TrimSpace(string(body)) == "ok" {
					return nil
				}
			}
		}
		if err != nil {
			last = err
		}
		if !alive() {
			return fmt.Errorf("exited: %w", last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
