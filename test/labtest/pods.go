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
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/test/require"
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
	return e.PodNetNS(t, cluster, pods[0]), netip.MustParseAddr(pods[0].Status.PodIP)
}

// PodNetNS is what the helpers here take as a pod's network namespace:
// /proc/<pid>/ns/net of its first container.
func (e *Env) PodNetNS(t testing.TB, cluster string, p corev1.Pod) string {
	t.Helper()
	ns, err := e.Lab.PodNetNS(context.Background(), cluster, &p)
	if err != nil {
		t.Fatal(err)
	}
	return ns
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
	return TryWhereamiWithin(ns, hostPort, 5*time.Second)
}

// TryWhereamiWithin is TryWhereami giving up after timeout.
func TryWhereamiWithin(ns, hostPort string, timeout time.Duration) (workload.Answer, error) {
	body, err := GetWithin(ns, "http://"+hostPort+"/", timeout)
	if err != nil {
		return workload.Answer{}, err
	}
	var a workload.Answer
	if err := json.Unmarshal(body, &a); err != nil {
		return a, fmt.Errorf("GET http://%s: %w: %q", hostPort, err, body)
	}
	return a, nil
}

// TryWhereamiUDP sends one datagram to whereami at hostPort (an address) from inside a
// pod's network namespace, from a new socket (so a new conntrack entry, and kube-proxy
// picks an endpoint again), and returns its answer.
func TryWhereamiUDP(ns, hostPort string) (workload.Answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var a workload.Answer
	c, err := netns.Dial(ctx, ns, "udp", hostPort)
	if err != nil {
		return a, err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	if _, err := c.Write([]byte("whereami?")); err != nil {
		return a, fmt.Errorf("UDP to %s from %s: %w", hostPort, ns, err)
	}
	buf := make([]byte, 1500)
	n, err := c.Read(buf)
	if err != nil {
		return a, fmt.Errorf("UDP to %s from %s: %w", hostPort, ns, err)
	}
	if err := json.Unmarshal(buf[:n], &a); err != nil {
		return a, fmt.Errorf("UDP to %s: %w: %q", hostPort, err, buf[:n])
	}
	return a, nil
}

// GetWithin GETs url from inside the network namespace ns (names resolved through the
// namespace's resolv.conf) and returns the body of a 200 answer.
func GetWithin(ns, url string, timeout time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s from %s: %w", url, ns, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s from %s: %s", url, ns, resp.Status)
	}
	return body, err
}

// PodResolver queries the nameserver of the pod's resolv.conf from inside the pod's
// namespace.
func PodResolver(ns string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		server, _ := PodResolvConf(ns)
		return netns.Dial(ctx, ns, network, net.JoinHostPort(server, "53"))
	}}
}

// PodResolvConf reads the nameserver and search list of a pod's resolv.conf: the
// container's own for a real pod (ns /proc/<pid>/ns/net), the one ip(8) mounts for a
// named namespace.
func PodResolvConf(ns string) (server string, search []string) {
	path := filepath.Join(netns.EtcDir, ns, "resolv.conf")
	if filepath.IsAbs(ns) {
		path = filepath.Join(filepath.Dir(filepath.Dir(ns)), "root", "etc", "resolv.conf")
	}
	conf, _ := os.ReadFile(path)
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

// QueryInPod asks the nameserver of the pod's resolv.conf for name's records of qtype
// (dns.TypeA or dns.TypeAAAA), from inside the pod's network namespace: the answer's
// rcode and addresses. A resolver would not tell NOERROR without an address from
// NXDOMAIN or SERVFAIL; this does.
func QueryInPod(ns, name string, qtype uint16) (rcode int, ips []netip.Addr, err error) {
	server, _ := PodResolvConf(ns)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := netns.Dial(ctx, ns, "udp", net.JoinHostPort(server, "53"))
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	r, _, err := (&dns.Client{}).ExchangeWithConnContext(ctx, q, &dns.Conn{Conn: c})
	if err != nil {
		return 0, nil, err
	}
	for _, rr := range r.Answer {
		var raw net.IP
		switch rr := rr.(type) {
		case *dns.A:
			raw = rr.A
		case *dns.AAAA:
			raw = rr.AAAA
		default:
			continue
		}
		ip, _ := netip.AddrFromSlice(raw)
		ips = append(ips, ip.Unmap())
	}
	return r.Rcode, ips, nil
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

// PodOn is a pod of a sample app (named by the last element of image: whereami, client,
// iperf3; lab.SampleContainer) on
// the named node of a cluster, in the sample namespace: made on first use, kept until the
// lab goes. Sample pods land wherever the scheduler puts them; a test that needs a pod on
// a plain or on a gateway node pins its own.
func (e *Env) PodOn(t testing.TB, cluster, node, image string) corev1.Pod {
	t.Helper()
	pods := e.HostClient(t, cluster).CoreV1().Pods(lab.SampleNamespace)
	name := "e2e-" + path.Base(image) + "-" + node
	ctx := context.Background()
	c, err := lab.SampleContainer(cluster, path.Base(image))
	if err != nil {
		t.Fatal(err)
	}
	c.Name = "main"
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: lab.SampleNamespace,
		Labels: map[string]string{"app": "e2e-" + path.Base(image)}},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](0),
			AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{c}}}
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	require.Eventually(t, 2*time.Minute, cluster+": pod "+name+" ready", func() error {
		got, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lab.PodReady(got) != "Ready" || got.Status.PodIP == "" {
			return fmt.Errorf("%s, IP %q", lab.PodReady(got), got.Status.PodIP)
		}
		p = got
		return nil
	})
	return *p
}
