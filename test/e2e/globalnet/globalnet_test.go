package globalnet

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/argocd"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// converge bounds how long the lab may take to show a change; the tests log how long
// it took (benchmarks and docs/performance-lab-globalnet.md hold the numbers).
const converge = 90 * time.Second

// globalCIDR is a cluster's range of the global address space, from the hub's ClusterSet.
func globalCIDR(t *testing.T, cluster string) netip.Prefix {
	t.Helper()
	for _, c := range env.ClusterSet(t).Spec.Clusters {
		if c.Name == cluster {
			return netip.MustParsePrefix(c.GlobalCIDR)
		}
	}
	t.Fatalf("cluster %s not in the ClusterSet", cluster)
	return netip.Prefix{}
}

// lookupIn resolves name from g1's client pod until every answer lies in want (g2's
// global CIDR, or the one address of a clusterset IP).
func lookupIn(t *testing.T, ns, name string, want netip.Prefix) []netip.Addr {
	t.Helper()
	var got []netip.Addr
	took := require.Eventually(t, converge, "g1: "+name, func() error {
		got = nil
		ips, err := labtest.LookupInPod(context.Background(), ns, name)
		if err != nil {
			return err
		}
		for _, s := range ips {
			a := netip.MustParseAddr(s)
			if !want.Contains(a) {
				return fmt.Errorf("answer %s is not in %s (all: %v)", a, want, ips)
			}
			got = append(got, a)
		}
		return nil
	})
	t.Logf("g1: %s = %v (%s)", name, got, took.Round(time.Millisecond))
	return got
}

func TestBothClustersUseTheSamePodCIDR(t *testing.T) {
	env.Require(t)
	pods := map[string]bool{}
	for _, cluster := range []string{"g1", "g2"} {
		c, ok := env.Topo.Cluster(cluster)
		if !ok || c.PodCIDR != netip.MustParsePrefix("10.7.0.0/16") {
			t.Fatalf("%s: pod CIDR %v, want 10.7.0.0/16 (identical in both clusters)", cluster, c.PodCIDR)
		}
		for _, p := range env.SamplePods(t, cluster, lab.WhereamiCS) {
			pods[p.Status.PodIP] = true
		}
	}
	if len(pods) == 0 {
		t.Fatal("no whereami pods")
	}
}

// TestServiceAnswersWithGlobalIPs: from g1 the clusterset name of g2's ClusterSetIP
// export answers its clusterset IP in g1 (an address of g1's own service CIDR, behind
// which is g2's global IP); its cluster-qualified name and the headless names resolve
// to g2's global IPs (never to the 10.7.0.0/16 both clusters use); g2's whereami
// answers through every one of them, seeing the caller as one of g1's egress IPs.
func TestServiceAnswersWithGlobalIPs(t *testing.T) {
	env.Require(t)
	ns, clientIP := env.ClientNamespace(t, "g1")
	g1, g2 := globalCIDR(t, "g1"), globalCIDR(t, "g2")
	csIP := netip.MustParseAddr(env.ClusterSetIP(t, "g1", lab.WhereamiCS))
	for _, tc := range []struct {
		name, port string
		in         netip.Prefix
	}{
		{"whereami-cs.sample.svc.clusterset.local", "80", netip.PrefixFrom(csIP, 32)},
		{"g2.whereami-cs.sample.svc.clusterset.local", "80", g2},
		{"whereami-ss.sample.svc.clusterset.local", "8080", g2},
		{"whereami-0.g2.whereami-ss.sample.svc.clusterset.local", "8080", g2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ips := lookupIn(t, ns, tc.name, tc.in)
			var a workload.Answer
			require.Eventually(t, converge, "g1 → "+tc.name, func() error {
				var err error
				a, err = labtest.TryWhereami(ns, net.JoinHostPort(tc.name, tc.port))
				return err
			})
			if a.Cluster != "g2" {
				t.Fatalf("answered by %+v, want g2", a)
			}
			caller := netip.MustParseAddr(a.Caller)
			if !g1.Contains(caller) || caller == clientIP {
				t.Fatalf("g2's whereami saw the caller as %s, want one of g1's egress IPs in %s (not the pod's own %s)",
					caller, g1, clientIP)
			}
			if strings.HasPrefix(tc.name, "whereami-0.") {
				if len(ips) != 1 || a.Pod != "whereami-0" {
					t.Fatalf("%s = %v answered by %s, want one global IP of whereami-0", tc.name, ips, a.Pod)
				}
			}
		})
	}
}

// TestHeadlessPodsHaveGlobalIPsOfTheirOwn: whereami-ss has one global IP per pod.
func TestHeadlessPodsHaveGlobalIPsOfTheirOwn(t *testing.T) {
	env.Require(t)
	ns, _ := env.ClientNamespace(t, "g1")
	g2 := globalCIDR(t, "g2")
	ips := lookupIn(t, ns, "whereami-ss.sample.svc.clusterset.local", g2)
	pods := env.SamplePods(t, "g2", lab.WhereamiSS)
	if len(ips) != len(pods) {
		t.Fatalf("whereami-ss = %v, want one global IP for each of g2's %d pods", ips, len(pods))
	}
	seen := map[string]netip.Addr{}
	for _, ip := range ips {
		a := labtest.Whereami(t, ns, net.JoinHostPort(ip.String(), "8080"))
		if prev, dup := seen[a.Pod]; dup {
			t.Fatalf("pod %s answers at %s and %s", a.Pod, prev, ip)
		}
		seen[a.Pod] = ip
	}
}

// TestGatewayNATIsMapsNotRules: g2's active gateway holds the NAT as a few rules over
// maps; a user can read it with nft.
func TestGatewayNATIsMapsNotRules(t *testing.T) {
	env.Require(t)
	gw := env.ActiveGateway(t, "g2").Namespace
	out, err := exec.Command("ip", "netns", "exec", gw, "nft", "list", "table", "ip", "strait").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list table ip strait on %s: %v\n%s", gw, err, out)
	}
	text := string(out)
	for _, want := range []string{"map gn-svc-dnat", "map gn-svc-port", "map gn-svc-slots", "map gn-svc-sticky", "map gn-pod-dnat", "map gn-egress"} {
		if !strings.Contains(text, want) {
			t.Errorf("%s: no %q in:\n%s", gw, want, text)
		}
	}
	rules := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "dnat") && !strings.Contains(line, "map gn-") {
			rules++
		}
	}
	if n := rules; n != 4 {
		t.Errorf("%s: %d DNAT rules, want 4 (one per map, whatever the number of global IPs):\n%s", gw, n, text)
	}
}

// webhookRefresh bounds the time from a push to Argo CD's refresh of the Application by
// its webhook: the git server posts the push event as it answers the push, and
// argocd-server annotates the Application at once (a resync would take up to 3 s and
// sets no annotation).
const webhookRefresh = 2 * time.Second

// pushToDNS bounds a push's way into g1's answers through the webhook: Argo CD's
// refresh, comparison and sync, strait hub's reconcile into both members, g1's strait
// dns (0.83 s on an idle machine; a resync would add up to 3 s).
const pushToDNS = 5 * time.Second

// TestNewExportReachesG1: a service exported from g2 by a ClusterSet change gets a global
// IP (g2's name for it in g1) that no pod holds, and a clusterset IP in g1 that g1
// resolves and reaches (port 80 to the pods' 8080); unexported, the name goes.
func TestNewExportReachesG1(t *testing.T) {
	env.Require(t)
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "whereami-new", Namespace: lab.SampleNamespace},
		Spec: corev1.ServiceSpec{Selector: env.SamplePods(t, "g2", lab.WhereamiCS)[0].Labels,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(workload.WhereamiPort)}}}}
	g2 := env.HostClient(t, "g2").CoreV1().Services(lab.SampleNamespace)
	if _, err := g2.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g2.Delete(context.Background(), svc.Name, metav1.DeleteOptions{}) })
	env.RestoreClusterSetSpec(t)
	ns, _ := env.ClientNamespace(t, "g1")
	headless := lookupIn(t, ns, "whereami-ss.sample.svc.clusterset.local", globalCIDR(t, "g2"))
	refreshed := watchRefresh(t)
	start := time.Now()
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: lab.SampleNamespace, Name: svc.Name,
			Clusters: []string{"g2"}})
	}); err != nil {
		t.Fatal(err)
	}
	name := "whereami-new.sample.svc.clusterset.local"
	ips := lookupIn(t, ns, "g2."+name, globalCIDR(t, "g2"))
	answered := time.Since(start)
	t.Logf("export → g1 resolves g2.%s: %s", name, answered.Round(time.Millisecond))
	// The push reached Argo CD through its webhook (the git server's push event to
	// argocd-server's /api/webhook), which alone sets the refresh annotation: a broken
	// webhook path would leave the commit to the 3-s resync, and this fails.
	refreshed.stop()
	took, ok := refreshed.since(start)
	t.Logf("push → Argo CD's webhook refresh of application/%s: %s (seen: %v)", argocd.AppName, took.Round(time.Millisecond), ok)
	if !ok || took > webhookRefresh {
		t.Errorf("application/%s: Argo CD's webhook refresh %s after the push (seen: %v), want within %s: the push did not come through /api/webhook",
			argocd.AppName, took.Round(time.Millisecond), ok, webhookRefresh)
	}
	if answered > pushToDNS {
		t.Errorf("push → g1 answering g2.%s took %s, want within %s", name, answered.Round(time.Millisecond), pushToDNS)
	}
	lookupIn(t, ns, name, netip.PrefixFrom(netip.MustParseAddr(env.ClusterSetIP(t, "g1", svc.Name)), 32))
	t.Logf("export → g1 resolves %s to its clusterset IP: %s", name, time.Since(start).Round(time.Millisecond))
	if slices.Contains(headless, ips[0]) {
		t.Fatalf("the new export got %s, a global IP of a whereami-ss pod (%v)", ips[0], headless)
	}
	if again := lookupIn(t, ns, "whereami-ss.sample.svc.clusterset.local", globalCIDR(t, "g2")); !slices.Equal(again, headless) {
		t.Fatalf("whereami-ss moved from %v to %v when another service was exported", headless, again)
	}
	require.Eventually(t, converge, "g1 → "+name, func() error {
		a, err := labtest.TryWhereami(ns, name+":80")
		if err == nil && a.Cluster != "g2" {
			err = fmt.Errorf("answered by %s", a.Cluster)
		}
		return err
	})
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.Exports = slices.DeleteFunc(cs.Spec.Exports, func(e straitv1.ExportSpec) bool { return e.Name == svc.Name })
	}); err != nil {
		t.Fatal(err)
	}
	require.Eventually(t, converge, "g1: "+name+" gone", func() error {
		if ips, err := labtest.LookupInPod(ctx, ns, name); err == nil {
			return fmt.Errorf("still resolves to %v", ips)
		}
		return nil
	})
}

// TestHostRoutesIntoTheLab: the host sends an address of every range of the globalnet
// lab, the global range and the pod and service CIDRs both members share included, into
// the lab's link and never out through its default route (ip route get: nothing is sent).
func TestHostRoutesIntoTheLab(t *testing.T) {
	env.Require(t)
	env.CheckHostRoutes(t)
}
