package e2e

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/labtest"
)

func TestPodsGetIPs(t *testing.T) {
	env.Require(t)
	for _, cluster := range members() {
		c, _ := env.Topo.Cluster(cluster)
		pods, err := env.HostClient(t, cluster).CoreV1().Pods(lab.SampleNamespace).List(context.Background(), metav1.ListOptions{})
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
			if lab.PodReady(&p) != "Ready" {
				t.Errorf("%s: pod %s not ready", cluster, p.Name)
			}
		}
		if len(seen) < 6 {
			t.Errorf("%s: %d sample pods with IPs, want 6", cluster, len(seen))
		}
	}
}

func TestPodToPod(t *testing.T) {
	env.Require(t)
	for _, cluster := range members() {
		ns, clientIP := env.ClientNamespace(t, cluster)
		for _, p := range env.SamplePods(t, cluster, lab.WhereamiSS) {
			a := labtest.Whereami(t, ns, net.JoinHostPort(p.Status.PodIP, "8080"))
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
	env.Require(t)
	for _, cluster := range members() {
		svc, err := env.HostClient(t, cluster).CoreV1().Services(lab.SampleNamespace).Get(context.Background(), lab.WhereamiCS, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var backends []string
		for _, p := range env.SamplePods(t, cluster, lab.WhereamiCS) {
			backends = append(backends, p.Name)
		}
		ns, _ := env.ClientNamespace(t, cluster)
		// kube-proxy programs a new endpoint within a sync period (1 s); allow for that.
		seen := map[string]bool{}
		for i := 0; i < 100 && len(seen) < len(backends); i++ {
			a := labtest.Whereami(t, ns, net.JoinHostPort(svc.Spec.ClusterIP, "80"))
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
	env.Require(t)
	ctx := context.Background()
	for _, cluster := range members() {
		client := env.HostClient(t, cluster)
		svc, err := client.CoreV1().Services(lab.SampleNamespace).Get(ctx, lab.WhereamiCS, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ns, _ := env.ClientNamespace(t, cluster)
		r := labtest.PodResolver(ns)
		got, err := r.LookupHost(ctx, "whereami-cs.sample.svc.cluster.local")
		if err != nil || !slices.Equal(got, []string{svc.Spec.ClusterIP}) {
			t.Errorf("%s: whereami-cs = %v, %v; want [%s]", cluster, got, err, svc.Spec.ClusterIP)
		}
		var podIPs []string
		for _, p := range env.SamplePods(t, cluster, lab.WhereamiSS) {
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
		if a := labtest.Whereami(t, ns, "whereami-0.whereami-ss:8080"); a.Pod != "whereami-0" {
			t.Errorf("%s: whereami-0.whereami-ss answered as %q", cluster, a.Pod)
		}
		if a := labtest.Whereami(t, ns, "whereami-cs"); a.Cluster != cluster {
			t.Errorf("%s: whereami-cs answered from cluster %q", cluster, a.Cluster)
		}
	}
}

func TestKubeconfigOnLoopbackAndHub(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	for _, cluster := range members() {
		nodes, err := env.HostClient(t, cluster).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s through the forwarder: %v", cluster, err)
		}
		gateways := 0
		for _, n := range nodes.Items {
			if lab.NodeReady(&n) != "Ready" {
				t.Errorf("%s: node %s not ready", cluster, n.Name)
			}
			if n.Labels[topology.GatewayLabel] == "true" {
				gateways++
			}
		}
		if len(nodes.Items) != 3 || gateways != 2 {
			t.Errorf("%s: %d nodes, %d gateway-capable; want 3 and 2", cluster, len(nodes.Items), gateways)
		}
	}
	hub := env.HostClient(t, topology.HubName)
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
	env.Require(t)
	before := env.Lab.State().AllPids()
	rec, _, err := env.Lab.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Lab.Up(context.Background(), lab.UpOptions{Spec: rec.Spec, ClusterSet: rec.ClusterSet}); err != nil {
		t.Fatalf("second up: %v", err)
	}
	after := env.Lab.State().AllPids()
	for k, pid := range before {
		if netns.Alive(pid) && after[k] != pid {
			t.Errorf("%s restarted: pid %d → %d", k, pid, after[k])
		}
	}
	other := rec.Spec
	other.Workers++
	if err := env.Lab.Up(context.Background(), lab.UpOptions{Spec: other, ClusterSet: rec.ClusterSet}); err == nil ||
		!strings.Contains(err.Error(), "a different lab is up") {
		t.Errorf("up with another spec: %v, want a refusal", err)
	}
}

// TestStraitInTheLab checks the lab's wiring of Strait's own daemons: strait hub reaches
// every member over its LAN and writes the Membership; strait dns answers clusterset.local
// through the cluster's CoreDNS; c1's client reaches c2's whereami through the cable.
func TestStraitInTheLab(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	deadline := time.Now().Add(90 * time.Second)
	for _, cluster := range members() {
		path := "/apis/strait.io/v1alpha1/namespaces/strait-system/memberships"
		for {
			raw, err := env.HostClient(t, cluster).Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
			if err == nil && strings.Contains(string(raw), `"clusterID":"`+cluster+`"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Logf("strait hub's logs, last lines:\n%s", env.StraitLogs(t, topology.HubName, labtest.HubApp, "hub", 40))
				t.Fatalf("%s: no Membership written by strait hub: %v %s", cluster, err, raw)
			}
			time.Sleep(time.Second)
		}
	}
	// c2 exports whereami-cs; from c1's client pod the clusterset name is the import's
	// clusterset IP, which strait dns wrote into c1's ServiceImport.
	ip := env.ClusterSetIP(t, "c1", lab.WhereamiCS)
	ns, _ := env.ClientNamespace(t, "c1")
	for {
		got, err := labtest.PodResolver(ns).LookupHost(ctx, "whereami-cs.sample.svc.clusterset.local.")
		if err == nil && slices.Equal(got, []string{ip}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("c1: whereami-cs.sample.svc.clusterset.local = %v, %v; want the clusterset IP %s", got, err, ip)
		}
		time.Sleep(time.Second)
	}
	// Through the gateways' cable: c1's client reaches c2's whereami by its clusterset name.
	for {
		a, err := labtest.TryWhereami(ns, "whereami-cs.sample.svc.clusterset.local:80")
		if err == nil && a.Cluster == "c2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("c1 → whereami-cs.sample.svc.clusterset.local: %+v, %v; want an answer from c2", a, err)
		}
		time.Sleep(time.Second)
	}
}
