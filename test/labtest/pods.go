package labtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/netns"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/lab/workload"
)

// HostClient is a clientset of a cluster (or the hub) through its loopback forwarder.
func (e *Env) HostClient(t testing.TB, cluster string) kubernetes.Interface {
	t.Helper()
	c, err := e.Lab.HostClient(cluster)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// SamplePods are a cluster's pods of one sample app (label app=NAME).
func (e *Env) SamplePods(t testing.TB, cluster, app string) []corev1.Pod {
	t.Helper()
	pods, err := e.HostClient(t, cluster).CoreV1().Pods(lab.SampleNamespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// ClientNamespace is the network namespace and IP of the cluster's idle client pod.
func (e *Env) ClientNamespace(t testing.TB, cluster string) (string, netip.Addr) {
	t.Helper()
	pods := e.SamplePods(t, cluster, lab.Client)
	if len(pods) != 1 {
		t.Fatalf("%s: want one client pod, got %d", cluster, len(pods))
	}
	return topology.PodNamespace(cluster, string(pods[0].UID)), netip.MustParseAddr(pods[0].Status.PodIP)
}

// Whereami asks a whereami server at hostPort (names resolved as in the pod) from inside
// a pod's network namespace.
func Whereami(t testing.TB, ns, hostPort string) workload.Answer {
	t.Helper()
	a, err := TryWhereami(ns, hostPort)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TryWhereami is Whereami returning its error.
func TryWhereami(ns, hostPort string) (workload.Answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, port, err := net.SplitHostPort(addr); err == nil && net.ParseIP(host) == nil {
				ips, err := LookupInPod(ctx, ns, host)
				if err != nil {
					return nil, err
				}
				addr = net.JoinHostPort(ips[0], port)
			}
			return netns.Dial(ctx, ns, network, addr)
		},
		DisableKeepAlives: true,
	}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hostPort+"/", nil)
	resp, err := hc.Do(req)
	if err != nil {
		return workload.Answer{}, fmt.Errorf("GET http://%s from %s: %w", hostPort, ns, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var a workload.Answer
	if err := json.Unmarshal(body, &a); err != nil {
		return a, fmt.Errorf("GET http://%s: %w: %q", hostPort, err, body)
	}
	return a, nil
}

// PodResolver queries the nameserver of the pod's resolv.conf from inside the pod's
// namespace.
func PodResolver(ns string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		server, _ := PodResolvConf(ns)
		return netns.Dial(ctx, ns, network, net.JoinHostPort(server, "53"))
	}}
}

// PodResolvConf reads the nameserver and search list of a pod's resolv.conf.
func PodResolvConf(ns string) (server string, search []string) {
	conf, _ := os.ReadFile(filepath.Join(netns.EtcDir, ns, "resolv.conf"))
	sc := bufio.NewScanner(bytes.NewReader(conf))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "nameserver" {
			server = f[1]
		}
		if len(f) >= 2 && f[0] == "search" {
			search = f[1:]
		}
	}
	return server, search
}

// LookupInPod resolves a name as a program in the pod would: names with fewer than 5
// dots (ndots:5) through the search list first.
func LookupInPod(ctx context.Context, ns, name string) ([]string, error) {
	_, search := PodResolvConf(ns)
	var candidates []string
	if strings.Count(name, ".") < 5 && !strings.HasSuffix(name, ".") {
		for _, s := range search {
			candidates = append(candidates, name+"."+s+".")
		}
	}
	candidates = append(candidates, strings.TrimSuffix(name, ".")+".")
	r := PodResolver(ns)
	var last error
	for _, c := range candidates {
		ips, err := r.LookupHost(ctx, c)
		if err == nil {
			return ips, nil
		}
		last = err
	}
	return nil, last
}

// Eventually calls check every interval until it returns nil, and fails the test with
// check's last error after timeout. It returns how long it took.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := check()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
