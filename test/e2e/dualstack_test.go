package e2e

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/test/labtest"
)

// TestDualStackClusters: the lab's clusters are dual-stack inside, as the ClusterSet
// lists them: in each member every sample pod has an IPv4 and an IPv6 address (in that
// order, the IPv6 one in the IPv6 pod CIDR the ClusterSet lists for it), a
// PreferDualStack Service gets a ClusterIP of each family, and from the client pod
// another node's pod and the Service's IPv6 ClusterIP answer over IPv6 seeing the
// client's own IPv6 address, and CoreDNS answers the Service's AAAA with that
// ClusterIP (an IPv4-only Service's AAAA stays empty).
func TestDualStackClusters(t *testing.T) {
	env.Require(t)
	for _, cluster := range members() {
		t.Run(cluster, func(t *testing.T) {
			c, ok := env.Topo.Cluster(cluster)
			if !ok || !c.PodCIDR6.IsValid() {
				t.Fatalf("%s is not dual-stack in the lab's topology", cluster)
			}
			if listed := listedCIDRs(t, cluster); !slices.Equal(listed, []netip.Prefix{c.PodCIDR, c.PodCIDR6, c.ServiceCIDR, c.ServiceCIDR6}) {
				t.Fatalf("%s: the lab's ranges %v %v %v %v, the ClusterSet's %v", cluster, c.PodCIDR, c.PodCIDR6, c.ServiceCIDR, c.ServiceCIDR6, listed)
			}
			client := env.HostClient(t, cluster)
			ctx := context.Background()
			pods, err := client.CoreV1().Pods(lab.SampleNamespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var caller netip.Addr
			var callerNode string
			for _, p := range pods.Items {
				v6 := secondFamily(t, p, c.PodCIDR, c.PodCIDR6)
				if p.Labels["app"] == lab.Client {
					caller, callerNode = v6, p.Spec.NodeName
				}
			}
			ns, _ := env.ClientNamespace(t, cluster)

			// Pod to pod across nodes, over IPv6: a whereami pod on another node than the
			// client's (the scheduler may have put the sample's beside it).
			other := whereamiElsewhere(t, client, pods.Items, callerNode)
			secondFamily(t, *other, c.PodCIDR, c.PodCIDR6)
			to := net.JoinHostPort(other.Status.PodIPs[1].IP, strconv.Itoa(workload.WhereamiPort))
			a, err := labtest.TryWhereami(ns, to)
			if err != nil || a.Pod != other.Name || a.Caller != caller.String() {
				t.Errorf("client (%s) -> %s on %s at %s: %+v, %v; want %s answering, seeing %s",
					callerNode, other.Name, other.Spec.NodeName, to, a, err, other.Name, caller)
			}

			// A PreferDualStack Service: a ClusterIP of each family.
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "whereami-dualstack", Namespace: lab.SampleNamespace},
				Spec: corev1.ServiceSpec{IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyPreferDualStack),
					Selector: map[string]string{"app": lab.WhereamiCS},
					Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(workload.WhereamiPort)}}}}
			svc, err = client.CoreV1().Services(lab.SampleNamespace).Create(ctx, svc, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = client.CoreV1().Services(lab.SampleNamespace).Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
			})
			if len(svc.Spec.ClusterIPs) != 2 || !slices.Equal(svc.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}) {
				t.Fatalf("PreferDualStack Service: ClusterIPs %v, families %v; want one of each, IPv4 first", svc.Spec.ClusterIPs, svc.Spec.IPFamilies)
			}
			ip6 := netip.MustParseAddr(svc.Spec.ClusterIPs[1])
			if !c.ServiceCIDR6.Contains(ip6) {
				t.Errorf("IPv6 ClusterIP %s outside %s's IPv6 service CIDR %s", ip6, cluster, c.ServiceCIDR6)
			}

			// Pod to the IPv6 ClusterIP, once kube-proxy has the Service.
			to = net.JoinHostPort(ip6.String(), "80")
			start := time.Now()
			for {
				a, err = labtest.TryWhereamiWithin(ns, to, 2*time.Second)
				if err == nil || time.Since(start) > 15*time.Second {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if err != nil || a.Caller != caller.String() || a.Cluster != cluster {
				t.Errorf("client -> ClusterIP %s: %+v, %v; want %s's whereami-cs seeing %s", to, a, err, cluster, caller)
			} else {
				t.Logf("%s: client %s -> [%s]:80 answered by %s on %s after %.1fs", cluster, caller, ip6, a.Pod, a.Node, time.Since(start).Seconds())
			}

			// CoreDNS: AAAA of the dual-stack Service, none for the IPv4-only one.
			r := labtest.PodResolver(ns)
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			name := svc.Name + "." + lab.SampleNamespace + ".svc.cluster.local"
			got, err := r.LookupNetIP(lctx, "ip6", name)
			if err != nil || len(got) != 1 || got[0] != ip6 {
				t.Errorf("AAAA %s: %v, %v; want %s", name, got, err, ip6)
			}
			v4only := lab.WhereamiCS + "." + lab.SampleNamespace + ".svc.cluster.local"
			if got, err := r.LookupNetIP(lctx, "ip6", v4only); len(got) != 0 {
				t.Errorf("AAAA %s (an IPv4 Service): %v, %v; want no address", v4only, got, err)
			}
		})
	}
}

// secondFamily checks that a pod has an IPv4 address in pods4 then an IPv6 one in
// pods6, and returns the IPv6 one.
func secondFamily(t *testing.T, p corev1.Pod, pods4, pods6 netip.Prefix) netip.Addr {
	t.Helper()
	var ips []netip.Addr
	for _, ip := range p.Status.PodIPs {
		if a, err := netip.ParseAddr(ip.IP); err == nil {
			ips = append(ips, a)
		}
	}
	if len(ips) != 2 || !pods4.Contains(ips[0]) || !pods6.Contains(ips[1]) {
		t.Fatalf("pod %s: addresses %v, want one in %s then one in %s", p.Name, p.Status.PodIPs, pods4, pods6)
	}
	return ips[1]
}

// whereamiElsewhere starts a whereami pod like the sample's (its containers) on a node
// other than callerNode, waits until it is ready, and removes it when the test ends.
func whereamiElsewhere(t *testing.T, client kubernetes.Interface, pods []corev1.Pod, callerNode string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	var like *corev1.Pod
	for i, p := range pods {
		if p.Labels["app"] == lab.WhereamiCS {
			like = &pods[i]
		}
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || like == nil {
		t.Fatalf("no whereami-cs pod to copy (%v) or no nodes: %v", like == nil, err)
	}
	var node string
	for _, n := range nodes.Items {
		if n.Name != callerNode {
			node = n.Name
		}
	}
	if node == "" {
		t.Fatalf("no node but the client's %s", callerNode)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "whereami-elsewhere", Namespace: lab.SampleNamespace,
		Labels: map[string]string{"app": "whereami-elsewhere"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: like.Spec.Containers, TerminationGracePeriodSeconds: ptr.To[int64](0),
			AutomountServiceAccountToken: ptr.To(false)}}
	if _, err := client.CoreV1().Pods(lab.SampleNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CoreV1().Pods(lab.SampleNamespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := client.CoreV1().Pods(lab.SampleNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && len(got.Status.PodIPs) == 2 && lab.PodReady(got) == "Ready" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("whereami-elsewhere on %s not ready within 60 s: %v", node, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
