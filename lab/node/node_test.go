package node_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/image"
	"github.com/straitnet/strait/lab/node"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

// TestNodesRunPodsFromLocalImagesAndLeaveNothing starts two real nodes (containerd, runc,
// kubelet) against a real API server, the first importing the locally built images and
// saving their seed, the second from that seed; removes the image the second node's pod
// will run from the first node (containerd's garbage collection then deletes its blobs
// and snapshots there), runs pods with imagePullPolicy Never and IfNotPresent, reads a
// pod's log and execs into it through the API server, sends HTTP from a pod on one node
// to a pod on the other over routes between their pod CIDRs, then tears the nodes down
// from what is on disk and checks nothing of them is left on the host.
func TestNodesRunPodsFromLocalImagesAndLeaveNothing(t *testing.T) {
	require.Root(t, "nsenter")
	testStart := time.Now()
	root, err := clusters.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bins := requireArtifacts(t, root)
	before := hostState(t)

	if lacks := clusters.Lacks(root); lacks != "" {
		require.Skip(t, "%s", lacks)
	}
	cluster, err := clusters.StartCluster("node-test")
	if err != nil {
		t.Fatal(err)
	}
	// After exec and logs through real kubelets, kube-apiserver does not finish its
	// graceful shutdown within envtest's stop timeout and is killed then (nothing is
	// left); not a failure of the node, so only said.
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Logf("stopping the API server: %v", err)
		}
	})
	cfg := cluster.Config
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Under /run, as the lab's: the node's tmpfs over /run must bind it back. Short: the
	// kubelet's sockets live under it.
	tmp, err := os.MkdirTemp("/run", "strait-node-test-")
	if err != nil {
		t.Fatal(err)
	}
	seeds := filepath.Join(tmp, "seeds")
	t.Cleanup(func() { _ = os.Remove(tmp) })
	t.Cleanup(func() { _ = os.RemoveAll(seeds) })
	t.Cleanup(func() { _ = node.TeardownAll(tmp) })

	x := byte(rand.IntN(250) + 1)
	a := plan(t, cfg, bins, tmp, x, 0, seeds)
	b := plan(t, cfg, bins, tmp, x, 1, seeds)
	// Each node routes the other's pod CIDR over a direct link, as the lab's nodes do.
	netns.Veth(t, a.ns, "peer", b.ns, "peer")
	a.ns.AddAddr(t, "peer", fmt.Sprintf("10.252.%d.9/30", x))
	b.ns.AddAddr(t, "peer", fmt.Sprintf("10.252.%d.10/30", x))
	a.ns.AddRoute(t, b.cfg.PodCIDR.String(), fmt.Sprintf("10.252.%d.10", x), "peer")
	b.ns.AddRoute(t, a.cfg.PodCIDR.String(), fmt.Sprintf("10.252.%d.9", x), "peer")
	t.Logf("API server and namespaces ready after %s", time.Since(testStart).Round(time.Millisecond))

	started := time.Now()
	na := startNode(t, ctx, a.cfg)
	nb := startNode(t, ctx, b.cfg)
	for n, want := range map[*node.Node]string{na: "import, seed saved", nb: "seed"} {
		tm := n.Timings()
		t.Logf("node %s: started in %s (containerd %s, images %s by %s, kubelet healthy %s)", n.Name(),
			(tm.Containerd + tm.Images + tm.Kubelet).Round(time.Millisecond), tm.Containerd.Round(time.Millisecond),
			tm.Images.Round(time.Millisecond), tm.ImagesFrom, tm.Kubelet.Round(time.Millisecond))
		if tm.ImagesFrom != want {
			t.Errorf("node %s got its images by %q, want %q", n.Name(), tm.ImagesFrom, want)
		}
	}
	// The first node's garbage collection must not reach the seed or the second's store.
	seedBlobs := blobsUnder(t, seeds)
	removeImage(t, ctx, bins, a.cfg.StateDir, "whereami")
	if left := blobsUnder(t, seeds); left != seedBlobs {
		t.Errorf("the seed held %d blobs, and %d after the first node removed an image", seedBlobs, left)
	}
	for _, n := range []*node.Node{na, nb} {
		waitFor(t, ctx, n, "node Ready", func() error { return nodeReady(ctx, cs, n.Name()) })
	}
	t.Logf("both nodes Ready %s after their start", time.Since(started).Round(time.Millisecond))

	mustCreate(t, ctx, cs, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"}})
	created := time.Now()
	tools := runPod(t, ctx, cs, na.Name(), "tools", image.Tools, corev1.PullNever, []string{"sh", "-c", "echo hello from $(hostname); exec sleep 3600"})
	waitFor(t, ctx, na, "tools pod Running", func() error { return podRunning(ctx, cs, tools) })
	t.Logf("pod: create → Running in %s", time.Since(created).Round(time.Millisecond))
	whereami := runPod(t, ctx, cs, nb.Name(), "whereami", image.Whereami, corev1.PullIfNotPresent, nil)
	waitFor(t, ctx, nb, "whereami pod Running", func() error { return podRunning(ctx, cs, whereami) })

	waitFor(t, ctx, na, "the tools pod's log", func() error {
		out, err := cs.CoreV1().Pods("default").GetLogs(tools, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return err
		}
		if !strings.Contains(string(out), "hello from tools") {
			return fmt.Errorf("log %q lacks %q", out, "hello from tools")
		}
		return nil
	})
	out := execIn(t, ctx, cfg, tools, "curl --version | head -1; dig -v 2>&1; iperf3 --version | head -1; socat -V | grep 'socat version'; busybox | head -1")
	for _, want := range []string{"curl ", "DiG ", "iperf 3", "socat version", "BusyBox"} {
		if !strings.Contains(out, want) {
			t.Errorf("exec in the tools pod: output lacks %q:\n%s", want, out)
		}
	}
	toolsIP, whereamiIP := podIP(t, ctx, cs, tools, a.cfg.PodCIDR), podIP(t, ctx, cs, whereami, b.cfg.PodCIDR)
	answer := execIn(t, ctx, cfg, tools, "wget -q -O - http://"+whereamiIP.String()+":8080/")
	if want := fmt.Sprintf(`"pod":"whereami","podIP":"%s","caller":"%s"`, whereamiIP, toolsIP); !strings.Contains(answer, want) {
		t.Errorf("whereami on the other node answered %q, want it to contain %s", answer, want)
	}

	for _, n := range []*node.Node{na, nb} {
		logRSS(t, n)
		if err := n.Err(); err != nil {
			t.Errorf("a component ended while the node was up: %v", err)
		}
	}
	// From what is on disk alone, as "lab down" after a crashed "lab up" would.
	down := time.Now()
	if err := node.TeardownAll(tmp); err != nil {
		t.Fatal(err)
	}
	t.Logf("teardown of both nodes: %s", time.Since(down).Round(time.Millisecond))
	assertNothingLeft(t, a.cfg.StateDir, a.cfg.Name, a.ns, before)
	assertNothingLeft(t, b.cfg.StateDir, b.cfg.Name, b.ns, before)
}

// plannedNode is a node's namespace, linked to the host, and its config.
type plannedNode struct {
	ns  *netns.NS
	cfg node.Config
}

// plan makes node i's namespace with a veth to the host in 10.252.x.(4i)/30 (a range
// neither the lab nor another test uses), so that the API server on the host reaches the
// kubelet and the kubelet (through a forwarder on the host's end) the API server; pods
// in 10.253.x.(128i)/25. The node imports the pause, tools and whereami images, or
// starts from their seed in seeds.
func plan(t *testing.T, cfg *rest.Config, bins artifacts, stateRoot string, x byte, i int, seeds string) plannedNode {
	hostIP := netip.AddrFrom4([4]byte{10, 252, x, byte(4*i + 1)})
	ns := netns.New(t, fmt.Sprintf("node%d", i))
	vethToHost(t, ns, fmt.Sprintf("stn%d-%d", x, i), hostIP, hostIP.Next())
	api, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("node-%d-%d", x, i)
	return plannedNode{ns: ns, cfg: node.Config{
		Name: name, NetNS: ns.Path(), NodeIP: hostIP.Next(),
		PodCIDR:    netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 253, x, byte(128 * i)}), 25),
		KubeConfig: kubeconfig(t, cfg, "https://"+forward(t, hostIP, api.Host)),
		BinDir:     bins.node, Kubelet: bins.kubelet, StateDir: filepath.Join(stateRoot, name),
		Images:       []string{bins.image(image.Pause), bins.image(image.Tools), bins.image(image.Whereami)},
		SandboxImage: image.Pause, Seeds: seeds,
	}}
}

func startNode(t *testing.T, ctx context.Context, c node.Config) *node.Node {
	n, err := node.Start(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// blobsUnder counts the content blobs of the seeds under dir.
func blobsUnder(t *testing.T, dir string) int {
	blobs, err := filepath.Glob(filepath.Join(dir, "*", "root", "io.containerd.content.v1.content", "blobs", "sha256", "*"))
	if err != nil || len(blobs) == 0 {
		t.Fatalf("no seed blobs under %s (%v)", dir, err)
	}
	return len(blobs)
}

// removeImage removes the image whose name contains name from the node at stateDir (its
// name and the CRI plugin's reference by ID) and checks that containerd's garbage
// collection deleted its blobs.
func removeImage(t *testing.T, ctx context.Context, bins artifacts, stateDir, name string) {
	ctr := func(args ...string) string {
		argv := append([]string{"--address", filepath.Join(stateDir, "containerd", "containerd.sock"), "--namespace", "k8s.io"}, args...)
		out, err := osexec.CommandContext(ctx, filepath.Join(bins.node, "ctr"), argv...).Output()
		if err != nil {
			t.Fatalf("ctr %v: %v", args, err)
		}
		return string(out)
	}
	// REF TYPE DIGEST SIZE ...: the refs of the image are those with its digest.
	rows := strings.Split(strings.TrimSpace(ctr("images", "ls")), "\n")[1:]
	var digest string
	for _, row := range rows {
		if f := strings.Fields(row); len(f) > 2 && strings.Contains(f[0], name) {
			digest = f[2]
		}
	}
	if digest == "" {
		t.Fatalf("no image named like %q on %s", name, stateDir)
	}
	refs := []string{"images", "rm", "--sync"}
	for _, row := range rows {
		if f := strings.Fields(row); len(f) > 2 && f[2] == digest {
			refs = append(refs, f[0])
		}
	}
	before := len(strings.Fields(ctr("content", "ls", "-q")))
	ctr(refs...)
	if after := len(strings.Fields(ctr("content", "ls", "-q"))); after >= before {
		t.Fatalf("removing %v from %s left %d blobs of %d: garbage collection deleted nothing", refs[3:], stateDir, after, before)
	}
}

func podIP(t *testing.T, ctx context.Context, cs kubernetes.Interface, pod string, cidr netip.Prefix) netip.Addr {
	p, err := cs.CoreV1().Pods("default").Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(p.Status.PodIP)
	if err != nil || !cidr.Contains(ip) {
		t.Fatalf("pod %s IP %q is not in its node's pod CIDR %s", pod, p.Status.PodIP, cidr)
	}
	return ip
}

type artifacts struct {
	node, kubelet string
	images        []string
}

// image is the tarball of ref, like bin/images/pause.tar for strait-lab/pause:dev.
func (a artifacts) image(ref string) string {
	name := strings.TrimSuffix(ref[strings.LastIndex(ref, "/")+1:], ":dev")
	for _, p := range a.images {
		if filepath.Base(p) == name+".tar" {
			return p
		}
	}
	return ""
}

// requireArtifacts finds the node binaries and images, or skips (fails under CI).
func requireArtifacts(t *testing.T, root string) artifacts {
	a := artifacts{node: filepath.Join(root, "bin", "node"), kubelet: filepath.Join(clusters.Assets(root), "kubelet")}
	need := []string{a.kubelet}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "ctr", "runc", "bridge", "host-local"} {
		need = append(need, filepath.Join(a.node, b))
	}
	for _, img := range []string{"pause", "tools", "whereami"} {
		p := filepath.Join(root, "bin", "images", img+".tar")
		a.images = append(a.images, p)
		need = append(need, p)
	}
	for _, p := range need {
		if _, err := os.Stat(p); err != nil {
			require.Skip(t, "%s missing (run make node-binaries images): %v", p, err)
		}
	}
	if _, err := osexec.LookPath("nsenter"); err != nil {
		t.Fatalf("nsenter (util-linux): %v", err)
	}
	return a
}

// vethToHost links the host and ns: hostIP/30 on the host's end, nodeIP/30 in ns.
func vethToHost(t *testing.T, ns *netns.NS, hostLink string, hostIP, nodeIP netip.Addr) {
	peer := hostLink + "p"
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: hostLink}, PeerName: peer, PeerNamespace: netlink.NsFd(ns.Fd())}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("veth %s: %v", hostLink, err)
	}
	t.Cleanup(func() {
		if l, err := netlink.LinkByName(hostLink); err == nil {
			_ = netlink.LinkDel(l)
		}
	})
	host, err := netlink.LinkByName(hostLink)
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.AddrAdd(host, &netlink.Addr{IPNet: prefix(hostIP, 30)}); err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetUp(host); err != nil {
		t.Fatal(err)
	}
	ns.AddAddr(t, peer, netip.PrefixFrom(nodeIP, 30).String())
	l, err := ns.NL.LinkByName(peer)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.NL.LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
}

func prefix(a netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(bits, 32)}
}

// forward serves target (the API server on the host's loopback) on hostIP, where the
// node reaches it.
func forward(t *testing.T, hostIP netip.Addr, target string) string {
	ln, err := net.Listen("tcp", net.JoinHostPort(hostIP.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				go func() { _, _ = io.Copy(u, c) }()
				_, _ = io.Copy(c, u)
			}()
		}
	}()
	return ln.Addr().String()
}

// kubeconfig is cfg's identity at server; the API server's certificate names localhost.
func kubeconfig(t *testing.T, cfg *rest.Config, server string) []byte {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["api"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cfg.CAData, TLSServerName: "localhost"}
	kc.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["node"] = &clientcmdapi.Context{Cluster: "api", AuthInfo: "node"}
	kc.CurrentContext = "node"
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func nodeReady(ctx context.Context, cs kubernetes.Interface, name string) error {
	n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
		}
	}
	return fmt.Errorf("no Ready condition")
}

func runPod(t *testing.T, ctx context.Context, cs kubernetes.Interface, nodeName, name, img string, pull corev1.PullPolicy, command []string) string {
	env := []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
	}
	mustCreate(t, ctx, cs, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      nodeName,
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: name, Image: img, Command: command, Env: env,
				ImagePullPolicy: pull}},
		},
	})
	return name
}

func mustCreate(t *testing.T, ctx context.Context, cs kubernetes.Interface, obj any) {
	var err error
	switch o := obj.(type) {
	case *corev1.Pod:
		_, err = cs.CoreV1().Pods(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *corev1.ServiceAccount:
		_, err = cs.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func podRunning(ctx context.Context, cs kubernetes.Interface, name string) error {
	p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if p.Status.Phase != corev1.PodRunning {
		var why []string
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Waiting != nil {
				why = append(why, s.State.Waiting.Reason+": "+s.State.Waiting.Message)
			}
		}
		return fmt.Errorf("phase %s %v", p.Status.Phase, why)
	}
	return nil
}

// waitFor polls fn until it succeeds; it stops at once when a node component died.
func waitFor(t *testing.T, ctx context.Context, n *node.Node, what string, fn func() error) {
	t.Helper()
	var last error
	for ctx.Err() == nil {
		if last = fn(); last == nil {
			return
		}
		if err := n.Err(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: %v\nkubelet log, last lines:\n%s", what, last, node.Tail(n.LogPath("kubelet"), 40))
}

// execIn runs sh -c cmd in the pod's container through the API server and the kubelet.
func execIn(t *testing.T, ctx context.Context, cfg *rest.Config, pod, cmd string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	streams := remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}
	if err := node.Exec(ctx, cfg, "default", pod, pod, []string{"sh", "-c", cmd}, streams); err != nil {
		t.Fatalf("exec %q in %s: %v (stderr %q)", cmd, pod, err, stderr.String())
	}
	return stdout.String() + stderr.String()
}

func logRSS(t *testing.T, n *node.Node) {
	containerd, kubelet := n.Pids()
	t.Logf("RSS: containerd %s, kubelet %s", rss(containerd), rss(kubelet))
}

func rss(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			return strings.Join(strings.Fields(strings.TrimPrefix(line, "VmRSS:")), " ")
		}
	}
	return "?"
}
