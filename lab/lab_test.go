package lab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/straitnet/strait/lab/netns"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/lab/workload"
)

// shared is the one lab every test in this package uses; bringing it up costs about
// half a minute, so TestMain does it once.
var shared struct {
	lab     *Lab
	topo    *topology.Lab
	skipped string // why the lab tests cannot run
	upErr   error
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		if reason := labPrerequisites(); reason != "" {
			if os.Getenv("CI") != "" {
				fmt.Fprintln(os.Stderr, "FAIL: lab tests cannot run under CI:", reason)
				return 1
			}
			shared.skipped = reason
			return m.Run()
		}
		tmp, err := os.MkdirTemp("", "strait-lab-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(tmp)
		strait := filepath.Join(tmp, "strait")
		build := exec.Command("go", "build", "-o", strait, "github.com/straitnet/strait/cmd/strait")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building strait:", err)
			return 1
		}
		root, _ := filepath.Abs("..")
		l := New(Options{StateDir: filepath.Join(tmp, "state"), K8sBin: k8sBin(root),
			CoreDNS: filepath.Join(root, "bin", "coredns"), Strait: strait, PortBase: 26443, Out: os.Stderr})
		shared.lab = l
		if err := crashUpThenDown(l, strait, root); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: down after a crash of up:", err)
			return 1
		}
		cs, err := os.ReadFile(filepath.Join(root, "examples", "clusterset", "basic", "clusterset.yaml"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		spec := topology.Spec{ClusterSet: "basic", Hub: true, Gateways: 1, Workers: 1, SampleWorkloads: true}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		shared.upErr = l.Up(ctx, UpOptions{Spec: spec, ClusterSet: cs, Timeout: 3 * time.Minute,
			WebhookManifest: filepath.Join(root, "kustomize", "hub", "workloads", "webhook.yaml"),
			CRDDirs:         []string{filepath.Join(root, "kustomize", "crd", "bases"), filepath.Join(root, "kustomize", "crd", "mcs")}})
		fmt.Fprintf(os.Stderr, "lab up: %.1fs, err=%v\n", time.Since(start).Seconds(), shared.upErr)
		if shared.upErr == nil {
			_, shared.topo, shared.upErr = l.Load()
		}
		code := m.Run()
		// A crash leaves the daemon and its kubelets behind: down must clean up after it.
		if pid, ok := l.state.Pid(daemonKey, "daemon"); ok {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if err := l.Down(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: lab down:", err)
			code = 1
		}
		time.Sleep(200 * time.Millisecond)
		if left := l.Leftovers(); len(left) > 0 {
			fmt.Fprintln(os.Stderr, "FAIL: lab down left:", strings.Join(left, "; "))
			code = 1
		}
		if links := hostLinks(); len(links) > 0 {
			fmt.Fprintln(os.Stderr, "FAIL: sl- links in the host namespace:", links)
			code = 1
		}
		return code
	}()
	os.Exit(code)
}

// crashUpThenDown kills "strait lab up" with SIGKILL once its control planes are
// starting, then checks that "lab down" leaves nothing behind.
func crashUpThenDown(l *Lab, strait, root string) error {
	up := exec.Command(strait, "lab", "up", "--example", "basic", "--state", l.state.Dir, "--port-base", "26443",
		"--k8s-bin", l.opts.K8sBin, "--coredns", l.opts.CoreDNS)
	up.Dir = root
	up.Stdout, up.Stderr = os.Stderr, os.Stderr
	if err := up.Start(); err != nil {
		return err
	}
	pidFile := filepath.Join(l.state.Dir, "c1", "pids", "kube-apiserver.pid")
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
	}
	time.Sleep(time.Second)
	_ = up.Process.Kill()
	_ = up.Wait()
	if err := l.Down(context.Background()); err != nil {
		return err
	}
	if left := l.Leftovers(); len(left) > 0 {
		return fmt.Errorf("left behind: %s", strings.Join(left, "; "))
	}
	return nil
}

// labPrerequisites says why the lab cannot run here, or "".
func labPrerequisites() string {
	if testing.Short() {
		return "-short"
	}
	if os.Geteuid() != 0 {
		return "needs root"
	}
	root, _ := filepath.Abs("..")
	for _, p := range []string{filepath.Join(k8sBin(root), "kube-apiserver"), filepath.Join(root, "bin", "coredns")} {
		if _, err := os.Stat(p); err != nil {
			return "missing " + p + " (make k8s-binaries coredns)"
		}
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "missing " + tool
		}
	}
	if names, _ := netns.List(topology.Prefix); len(names) > 0 {
		return "a lab is already up on this machine (sl-* namespaces exist); run 'strait lab down'"
	}
	return ""
}

func k8sBin(root string) string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	return filepath.Join(root, "bin", "k8s", "v1.37.1")
}

func hostLinks() []string {
	out, _ := exec.Command("ip", "-o", "link", "show").Output()
	var links []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], topology.Prefix) {
			links = append(links, f[1])
		}
	}
	return links
}

func requireLab(t *testing.T) {
	t.Helper()
	if shared.skipped != "" {
		t.Skip(shared.skipped)
	}
	if shared.upErr != nil {
		t.Fatalf("lab up failed: %v", shared.upErr)
	}
}

func members() []string { return []string{"c1", "c2"} }

func hostClient(t *testing.T, cluster string) kubernetes.Interface {
	t.Helper()
	c, err := shared.lab.hostClient(cluster)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func samplePods(t *testing.T, cluster, app string) []corev1.Pod {
	t.Helper()
	pods, err := hostClient(t, cluster).CoreV1().Pods(SampleNamespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// clientNamespace is the network namespace of the cluster's idle client pod.
func clientNamespace(t *testing.T, cluster string) (string, netip.Addr) {
	t.Helper()
	pods := samplePods(t, cluster, Client)
	if len(pods) != 1 {
		t.Fatalf("%s: want one client pod, got %d", cluster, len(pods))
	}
	return topology.PodNamespace(cluster, string(pods[0].UID)), netip.MustParseAddr(pods[0].Status.PodIP)
}

// whereami asks a whereami server at addr from inside a pod's namespace.
func whereami(t *testing.T, ns, hostPort string) workload.Answer {
	t.Helper()
	a, err := tryWhereami(ns, hostPort)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func tryWhereami(ns, hostPort string) (workload.Answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, port, err := net.SplitHostPort(addr); err == nil && net.ParseIP(host) == nil {
				ips, err := lookupInPod(ctx, ns, host)
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

// podResolver queries the nameserver of the pod's resolv.conf over UDP from inside the
// pod's namespace.
func podResolver(ns string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		server, _ := podResolvConf(ns)
		return netns.Dial(ctx, ns, network, net.JoinHostPort(server, "53"))
	}}
}

// podResolvConf reads the nameserver and search list of a pod's resolv.conf.
func podResolvConf(ns string) (server string, search []string) {
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

// lookupInPod resolves a name as a program in the pod would: names with fewer than 5
// dots (ndots:5) through the search list first.
func lookupInPod(ctx context.Context, ns, name string) ([]string, error) {
	_, search := podResolvConf(ns)
	var candidates []string
	if strings.Count(name, ".") < 5 && !strings.HasSuffix(name, ".") {
		for _, s := range search {
			candidates = append(candidates, name+"."+s+".")
		}
	}
	candidates = append(candidates, strings.TrimSuffix(name, ".")+".")
	r := podResolver(ns)
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

func TestPodsGetIPs(t *testing.T) {
	requireLab(t)
	for _, cluster := range members() {
		c, _ := shared.topo.Cluster(cluster)
		pods, err := hostClient(t, cluster).CoreV1().Pods(SampleNamespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, p := range pods.Items {
			ip, err := netip.ParseAddr(p.Status.PodIP)
			if err != nil {
				t.Errorf("%s: pod %s has no IP: %q", cluster, p.Name, p.Status.PodIP)
				continue
			}
			var node *topology.Node
			for i := range c.Nodes {
				if c.Nodes[i].Name == p.Spec.NodeName {
					node = &c.Nodes[i]
				}
			}
			if node == nil || !node.PodCIDR.Contains(ip) {
				t.Errorf("%s: pod %s IP %s is not in the pod CIDR of its node %s", cluster, p.Name, ip, p.Spec.NodeName)
			}
			if prev, dup := seen[ip.String()]; dup {
				t.Errorf("%s: pods %s and %s share %s", cluster, prev, p.Name, ip)
			}
			seen[ip.String()] = p.Name
			if podReady(&p) != "Ready" {
				t.Errorf("%s: pod %s not ready", cluster, p.Name)
			}
		}
		if len(seen) < 6 {
			t.Errorf("%s: %d sample pods with IPs, want 6", cluster, len(seen))
		}
	}
}

func TestPodToPod(t *testing.T) {
	requireLab(t)
	for _, cluster := range members() {
		ns, clientIP := clientNamespace(t, cluster)
		for _, p := range samplePods(t, cluster, WhereamiSS) {
			a := whereami(t, ns, net.JoinHostPort(p.Status.PodIP, "8080"))
			if a.Pod != p.Name || a.Cluster != cluster || a.Node != p.Spec.NodeName || a.PodIP != p.Status.PodIP {
				t.Errorf("%s: %s answered %+v", cluster, p.Name, a)
			}
			if a.Caller != clientIP.String() {
				t.Errorf("%s: %s saw caller %s, want the client pod %s (no NAT inside a cluster)", cluster, p.Name, a.Caller, clientIP)
			}
		}
	}
}

func TestClusterIPThroughKubeProxy(t *testing.T) {
	requireLab(t)
	for _, cluster := range members() {
		svc, err := hostClient(t, cluster).CoreV1().Services(SampleNamespace).Get(context.Background(), WhereamiCS, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var backends []string
		for _, p := range samplePods(t, cluster, WhereamiCS) {
			backends = append(backends, p.Name)
		}
		ns, _ := clientNamespace(t, cluster)
		// kube-proxy programs a new endpoint within a sync period (1 s); allow for that.
		seen := map[string]bool{}
		for i := 0; i < 100 && len(seen) < len(backends); i++ {
			a := whereami(t, ns, net.JoinHostPort(svc.Spec.ClusterIP, "80"))
			if !slices.Contains(backends, a.Pod) {
				t.Fatalf("%s: ClusterIP %s answered by %q, not one of %v", cluster, svc.Spec.ClusterIP, a.Pod, backends)
			}
			seen[a.Pod] = true
			time.Sleep(50 * time.Millisecond)
		}
		if len(seen) < len(backends) {
			t.Errorf("%s: 100 requests to %s reached only %v of %v", cluster, svc.Spec.ClusterIP, seen, backends)
		}
	}
}

func TestClusterDNS(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	for _, cluster := range members() {
		client := hostClient(t, cluster)
		svc, err := client.CoreV1().Services(SampleNamespace).Get(ctx, WhereamiCS, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ns, _ := clientNamespace(t, cluster)
		r := podResolver(ns)
		got, err := r.LookupHost(ctx, "whereami-cs.sample.svc.cluster.local")
		if err != nil || !slices.Equal(got, []string{svc.Spec.ClusterIP}) {
			t.Errorf("%s: whereami-cs = %v, %v; want [%s]", cluster, got, err, svc.Spec.ClusterIP)
		}
		var podIPs []string
		for _, p := range samplePods(t, cluster, WhereamiSS) {
			podIPs = append(podIPs, p.Status.PodIP)
		}
		sort.Strings(podIPs)
		// Pods are Ready before the EndpointSlice controller and CoreDNS have caught up:
		// give the headless record the time a person would.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
			got, err = r.LookupHost(ctx, "whereami-ss.sample.svc.cluster.local")
			sort.Strings(got)
			if err == nil && slices.Equal(got, podIPs) || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || !slices.Equal(got, podIPs) {
			t.Errorf("%s: headless whereami-ss = %v, %v; want %v", cluster, got, err, podIPs)
		}
		// The short name through the pod's search list, then HTTP to it.
		if a := whereami(t, ns, "whereami-0.whereami-ss:8080"); a.Pod != "whereami-0" {
			t.Errorf("%s: whereami-0.whereami-ss answered as %q", cluster, a.Pod)
		}
		if a := whereami(t, ns, "whereami-cs"); a.Cluster != cluster {
			t.Errorf("%s: whereami-cs answered from cluster %q", cluster, a.Cluster)
		}
	}
}

func TestKubeconfigOnLoopbackAndHub(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	for _, cluster := range members() {
		nodes, err := hostClient(t, cluster).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s through the forwarder: %v", cluster, err)
		}
		gateways := 0
		for _, n := range nodes.Items {
			if nodeReady(&n) != "Ready" {
				t.Errorf("%s: node %s not ready", cluster, n.Name)
			}
			if n.Labels[topology.GatewayLabel] == "true" {
				gateways++
			}
		}
		if len(nodes.Items) != 2 || gateways != 1 {
			t.Errorf("%s: %d nodes, %d gateways; want 2 and 1", cluster, len(nodes.Items), gateways)
		}
	}
	hub := hostClient(t, topology.HubName)
	for _, cluster := range members() {
		if _, err := hub.CoreV1().Secrets("strait-system").Get(ctx, cluster+"-kubeconfig", metav1.GetOptions{}); err != nil {
			t.Errorf("hub: %v", err)
		}
	}
	raw, err := hub.Discovery().RESTClient().Get().AbsPath("/apis/strait.io/v1alpha1/namespaces/strait-system/clustersets/demo").DoRaw(ctx)
	if err != nil {
		t.Errorf("hub: ClusterSet demo: %v: %s", err, raw)
	}
}

func TestUpAgainChangesNothing(t *testing.T) {
	requireLab(t)
	before := shared.lab.state.AllPids()
	root, _ := filepath.Abs("..")
	rec, _, err := shared.lab.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := shared.lab.Up(context.Background(), UpOptions{Spec: rec.Spec, ClusterSet: rec.ClusterSet,
		CRDDirs: []string{filepath.Join(root, "kustomize", "crd", "bases")}}); err != nil {
		t.Fatalf("second up: %v", err)
	}
	after := shared.lab.state.AllPids()
	for k, pid := range before {
		if netns.Alive(pid) && after[k] != pid {
			t.Errorf("%s restarted: pid %d → %d", k, pid, after[k])
		}
	}
	other := rec.Spec
	other.Workers++
	if err := shared.lab.Up(context.Background(), UpOptions{Spec: other, ClusterSet: rec.ClusterSet}); err == nil ||
		!strings.Contains(err.Error(), "a different lab is up") {
		t.Errorf("up with another spec: %v, want a refusal", err)
	}
}

// TestStraitInTheLab checks the lab's wiring of Strait's own daemons, when the strait
// binary has them: strait hub reaches every member over its LAN and writes the
// Membership; strait dns answers clusterset.local through the cluster's CoreDNS.
func TestStraitInTheLab(t *testing.T) {
	requireLab(t)
	if !shared.lab.straitSupports("hub") || !shared.lab.straitSupports("dns") {
		t.Skip("this strait binary has no hub or dns subcommand yet")
	}
	ctx := context.Background()
	deadline := time.Now().Add(90 * time.Second)
	for _, cluster := range members() {
		path := "/apis/strait.io/v1alpha1/namespaces/strait-system/memberships"
		for {
			raw, err := hostClient(t, cluster).Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
			if err == nil && strings.Contains(string(raw), `"clusterID":"`+cluster+`"`) {
				break
			}
			if time.Now().After(deadline) {
				if log, rerr := os.ReadFile(shared.lab.state.LogPath(topology.HubName, "strait-hub")); rerr == nil {
					lines := strings.Split(strings.TrimSpace(string(log)), "\n")
					t.Logf("strait hub's log, last lines:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
				}
				t.Fatalf("%s: no Membership written by strait hub: %v %s", cluster, err, raw)
			}
			time.Sleep(time.Second)
		}
	}
	// c2 exports whereami-cs; from c1's client pod the clusterset name is c2's ClusterIP.
	svc, err := hostClient(t, "c2").CoreV1().Services(SampleNamespace).Get(ctx, WhereamiCS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := clientNamespace(t, "c1")
	for {
		got, err := podResolver(ns).LookupHost(ctx, "whereami-cs.sample.svc.clusterset.local.")
		if err == nil && slices.Equal(got, []string{svc.Spec.ClusterIP}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("c1: whereami-cs.sample.svc.clusterset.local = %v, %v; want c2's ClusterIP %s", got, err, svc.Spec.ClusterIP)
		}
		time.Sleep(time.Second)
	}
	// Through the gateways' cable: c1's client reaches c2's whereami by its clusterset name.
	if !shared.lab.straitSupports("agent") {
		t.Skip("this strait binary has no agent subcommand yet")
	}
	for {
		a, err := tryWhereami(ns, "whereami-cs.sample.svc.clusterset.local:80")
		if err == nil && a.Cluster == "c2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("c1 → whereami-cs.sample.svc.clusterset.local: %+v, %v; want an answer from c2", a, err)
		}
		time.Sleep(time.Second)
	}
}
