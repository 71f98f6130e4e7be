package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/forward"
	"github.com/straitnet/strait/lab/gitserver"
	"github.com/straitnet/strait/lab/monitoring"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/lab/workload"
)

// GatewayIPAnnotation is where strait agent reads the address other gateways send tunnel
// traffic to (agent.AnnotationGatewayIP).
const GatewayIPAnnotation = "strait.io/gateway-ip"

// daemonKey is the pid-file directory of the lab daemon (not a valid cluster name).
const daemonKey = "_lab"

// DaemonPid is the pid of the lab daemon ("strait lab serve": forwarders), if
// its pid file exists.
func (s State) DaemonPid() (int, bool) { return s.Pid(daemonKey, "daemon") }

// Serve is the lab daemon until ctx ends: the loopback forwarder of every control
// plane (and of the hub's Prometheus in a lab with monitoring), the Corefile sync of
// every cluster, the git server of the clusterset repo on the hub's LAN address (for
// the GitOps controller) and on the host's loopback (for people), which asks the GitOps
// controller to sync after every push, and the internet namespace's echo of the
// caller's address.
func (l *Lab) Serve(ctx context.Context) error {
	r, t, err := l.Load()
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	run := func(what string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := fn(ctx); err != nil {
					fmt.Fprintf(os.Stderr, "%s: %v (retrying)\n", what, err)
				}
				select {
				case <-ctx.Done():
				case <-time.After(2 * time.Second):
				}
			}
		}()
	}
	for _, cp := range t.ControlPlanes() {
		f := forward.Forwarder{
			Listen:    fmt.Sprintf("127.0.0.1:%d", r.hostPort(t, cp.Cluster)),
			Namespace: cp.Namespace, Target: fmt.Sprintf("127.0.0.1:%d", topology.APIPort),
		}
		run("forwarder "+cp.Cluster, f.Run)
	}
	if r.Spec.Monitoring && t.Hub != nil {
		f := forward.Forwarder{
			Listen:    fmt.Sprintf("127.0.0.1:%d", r.PrometheusHostPort()),
			Namespace: t.Hub.Namespace, Target: fmt.Sprintf("127.0.0.1:%d", monitoring.Port),
		}
		run("forwarder hub prometheus", f.Run)
	}
	for _, cp := range t.ControlPlanes() {
		client, err := l.clientset(cp)
		if err != nil {
			return err
		}
		run("corefile "+cp.Cluster, func(ctx context.Context) error { return l.syncCorefile(ctx, cp.Cluster, client) })
	}
	if t.Hub != nil {
		git := gitserver.Server{Root: l.state.GitRoot(), OnPush: func(repo string) {
			if repo != RepoName {
				return
			}
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := l.RequestSync(rctx); err != nil {
				fmt.Fprintf(os.Stderr, "git push to %s: asking %s to sync: %v\n", repo, r.Spec.SyncsWith(), err)
			}
		}}
		listeners := map[string]func() (net.Listener, error){
			"git server (hub)": func() (net.Listener, error) {
				var ln net.Listener
				err := netns.Do(t.Hub.Namespace, func() (err error) {
					ln, err = net.Listen("tcp", netip.AddrPortFrom(t.Hub.LANAddr.Addr(), topology.GitPort).String())
					return err
				})
				return ln, err
			},
			"git server (host)": func() (net.Listener, error) {
				return net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", r.gitHostPort()))
			},
		}
		for what, listen := range listeners {
			run(what, func(ctx context.Context) error {
				ln, err := listen()
				if err != nil {
					return err
				}
				return git.Serve(ctx, ln)
			})
		}
	}
	if in := t.Internet; in != nil {
		// In a dual-stack lab the internet answers on its IPv6 address too.
		for what, addr := range map[string]netip.Addr{"internet echo": in.Addr, "internet echo (IPv6)": in.Addr6} {
			if !addr.IsValid() {
				continue
			}
			echo := netip.AddrPortFrom(addr, topology.EchoPort)
			run(what, func(ctx context.Context) error {
				var ln net.Listener
				if err := netns.Do(in.Namespace, func() (err error) {
					ln, err = net.Listen("tcp", echo.String())
					return err
				}); err != nil {
					return err
				}
				return serveEcho(ctx, ln, workload.Identity{Cluster: "internet", Node: in.Namespace, PodIP: addr.String()})
			})
		}
	}
	<-ctx.Done()
	return nil
}

// serveEcho answers HTTP on ln with whereami's JSON, whose caller is the address the
// request came from as the internet sees it, until ctx ends.
func serveEcho(ctx context.Context, ln net.Listener, id workload.Identity) error {
	srv := &http.Server{Handler: workload.Handler(id), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// syncCorefile copies the Corefile from kube-system/coredns to the file CoreDNS reads
// (with its reload plugin), as a kubelet does for a mounted ConfigMap.
func (l *Lab) syncCorefile(ctx context.Context, cluster string, client kubernetes.Interface) error {
	path := l.corefilePath(cluster)
	for {
		cm, err := client.CoreV1().ConfigMaps("kube-system").Get(ctx, "coredns", metav1.GetOptions{})
		if err == nil {
			want := []byte(cm.Data["Corefile"])
			if have, _ := os.ReadFile(path); len(want) > 0 && !bytes.Equal(have, want) {
				if err := writeAtomic(path, want); err != nil {
					return err
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
}

func (l *Lab) corefilePath(cluster string) string {
	return filepath.Join(l.state.ClusterDir(cluster), "Corefile")
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
