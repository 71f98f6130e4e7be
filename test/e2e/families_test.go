package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// whereamiDS is a PreferDualStack Service in front of the sample whereami pods: the
// sample's own Services stay IPv4 (Kubernetes' default), so the IPv6 checks across
// clusters bring their own.
const whereamiDS = "whereami-ds"

// families are the lab's, in the order a dual-stack pod lists its addresses.
func families() []corev1.IPFamily { return []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol} }

// TestAcrossInBothFamilies: from a client pod on a plain node of c1 (its traffic goes
// to the active gateway through vx-strait) and from one on a gateway node, over IPv4
// and over IPv6: c2's pod and c2's ClusterIP of that family answer, and the server
// sees the caller's own pod address of that family (no SNAT on the way). The lab's
// internet forwards nothing to a member's pod or service range but from the host
// (docs/lab.md, "A way out"), so an answer came through Strait.
func TestAcrossInBothFamilies(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	svc := dualStackService(t, "c2")
	remote := env.SamplePods(t, "c2", lab.WhereamiSS)[0]
	remoteIPs := podIPs(t, remote)
	for _, src := range env.SourcePods(t, "c1") {
		callers := podIPs(t, sourcePod(t, "c1", src))
		for i, f := range families() {
			where := fmt.Sprintf("from %s on %s (gateway node: %v) over %s", src.Name, src.Node, src.Gateway, f)
			to := net.JoinHostPort(remoteIPs[i].String(), "8080")
			a, err := labtest.TryWhereami(src.NS, to)
			if err != nil || a.Pod != remote.Name || a.Caller != callers[i].String() {
				t.Errorf("%s → c2's pod %s: %+v, %v; want %s answering, seeing the caller's %s", where, to, a, err, remote.Name, callers[i])
			}
			// A new Service: kube-proxy in c2 programs it within a second or two.
			to = net.JoinHostPort(svc.Spec.ClusterIPs[i], "80")
			require.Eventually(t, labtest.Converge, where+" → c2's ClusterIP "+to, func() error {
				a, err := labtest.TryWhereami(src.NS, to)
				if err == nil && (a.Cluster != "c2" || a.Caller != callers[i].String()) {
					err = fmt.Errorf("answered by %s/%s seeing %s, want c2 seeing %s", a.Cluster, a.Pod, a.Caller, callers[i])
				}
				return err
			})
		}
	}
}

// TestHealthCheckedInBothFamilies: each member's active gateway health-checks the other
// through the cable in both families at once, from a health-check address of each
// family inside its own pod ranges: the Peer lists an answered round per family (what
// `kubectl get peer -o yaml` shows), and the agent's latency series has a family label
// each.
func TestHealthCheckedInBothFamilies(t *testing.T) {
	env.Require(t)
	for _, pair := range [][2]string{{"c1", "c2"}, {"c2", "c1"}} {
		cluster, remote := pair[0], pair[1]
		ranges := listedCIDRs(t, remote)
		require.Eventually(t, labtest.Converge, cluster+"'s Peer "+remote+" health-checked in both families", func() error {
			st, err := peerStatus(t, cluster, remote)
			if err != nil {
				return err
			}
			if len(st.HealthChecks) != 2 {
				return fmt.Errorf("health checks %+v, want one IPv4 and one IPv6 round", st.HealthChecks)
			}
			for i, hc := range st.HealthChecks {
				a, err := netip.ParseAddr(hc.Address)
				if err != nil || hc.Family != families()[i] || hc.Received == 0 || hc.LatencyMicros <= 0 ||
					!slices.ContainsFunc(ranges, func(p netip.Prefix) bool { return p.Contains(a) }) {
					return fmt.Errorf("health check %+v: want %s answered, to an address inside %s's ranges %v", hc, families()[i], remote, ranges)
				}
			}
			for _, f := range []string{"ipv4", "ipv6"} {
				v, err := peerMetric(t, cluster, "strait_agent_peer_latency_seconds", f, remote)
				if err != nil {
					return err
				}
				if v <= 0 {
					return fmt.Errorf("strait_agent_peer_latency_seconds{family=%q,peer=%q} = %g, want above zero", f, remote, v)
				}
			}
			return nil
		})
	}
}

// TestClusterSetNameInBothFamilies: a PreferDualStack Service exported by c1 and c2 is
// imported in both with the families [IPv4, IPv6] and a clusterset IP of each (the
// ServiceImport's spec.ips, the derived Service's clusterIPs, inside the member's service
// ranges); its clusterset.local name answers A with the IPv4 one and AAAA with the IPv6
// one (while the IPv4-only whereami-cs's AAAA is NOERROR with no address); and 100
// connections from the client pod to each, new ones each time, are answered by both
// clusters, every one seeing the client's own address of that family.
func TestClusterSetNameInBothFamilies(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	for _, cluster := range members() {
		dualStackService(t, cluster)
	}
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: lab.SampleNamespace, Name: whereamiDS,
			Clusters: []string{"c1", "c2"}})
	}); err != nil {
		t.Fatal(err)
	}
	const name = whereamiDS + "." + lab.SampleNamespace + ".svc.clusterset.local"
	for _, cluster := range members() {
		c, _ := env.Topo.Cluster(cluster)
		ns, _ := env.ClientNamespace(t, cluster)
		callers := podIPs(t, env.SamplePods(t, cluster, lab.Client)[0])
		ips := clusterSetIPs(t, cluster, whereamiDS)
		if !c.ServiceCIDR.Contains(ips[0]) || !c.ServiceCIDR6.Contains(ips[1]) {
			t.Errorf("%s: clusterset IPs %v, want them in %s and %s", cluster, ips, c.ServiceCIDR, c.ServiceCIDR6)
		}
		r := labtest.PodResolver(ns)
		for i, network := range []string{"ip4", "ip6"} {
			require.Eventually(t, labtest.Converge, cluster+": "+network+" "+name, func() error {
				got, err := r.LookupNetIP(context.Background(), network, name+".")
				if err == nil && !slices.Equal(got, ips[i:i+1]) {
					err = fmt.Errorf("= %v, want [%s]", got, ips[i])
				}
				return err
			})
		}
		v4only := lab.WhereamiCS + "." + lab.SampleNamespace + ".svc.clusterset.local."
		if rcode, got, err := labtest.QueryInPod(ns, v4only, dns.TypeAAAA); err != nil || rcode != dns.RcodeSuccess || len(got) != 0 {
			t.Errorf("%s: AAAA %s (an IPv4 export): %s %v, %v; want NOERROR and no address", cluster, v4only, dns.RcodeToString[rcode], got, err)
		}
		for i, f := range families() {
			typ := discoveryv1.AddressType(f)
			require.Eventually(t, labtest.Converge, cluster+": both clusters in the derived "+string(typ)+" slices", func() error {
				got, err := env.DerivedSliceClusters(t, cluster, whereamiDS, typ)
				if err == nil && !slices.Equal(got, []string{"c1", "c2"}) {
					err = fmt.Errorf("derived %s slices hold %v", typ, got)
				}
				return err
			})
			to := net.JoinHostPort(ips[i].String(), "80")
			// kube-proxy programs each family's endpoints on its own (tables ip and ip6),
			// a moment after the slices: the first answer, then the count.
			require.Eventually(t, labtest.Converge, cluster+" → "+to, func() error {
				_, err := labtest.TryWhereami(ns, to)
				return err
			})
			s := labtest.Connect(100, func() (workload.Answer, error) { return labtest.TryWhereami(ns, to) })
			t.Logf("%s → its %s clusterset IP %s, 100 connections: %s", cluster, f, ips[i], s)
			s.CheckBalanced(t, 0.2, "c1", "c2")
			if len(s.Callers) != 1 || s.Callers[callers[i].String()] == 0 {
				t.Errorf("%s → %s: callers seen %v, want the client's own %s alone", cluster, to, s.Callers, callers[i])
			}
		}
	}
}

// dualStackService creates whereamiDS in the cluster, in front of its whereami-cs pods,
// and removes it when the test ends; it returns it with a ClusterIP of each family.
func dualStackService(t *testing.T, cluster string) *corev1.Service {
	t.Helper()
	svcs := env.HostClient(t, cluster).CoreV1().Services(lab.SampleNamespace)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: whereamiDS, Namespace: lab.SampleNamespace},
		Spec: corev1.ServiceSpec{IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicyPreferDualStack),
			Selector: map[string]string{"app": lab.WhereamiCS},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(workload.WhereamiPort)}}}}
	svc, err := svcs.Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := svcs.Delete(context.Background(), whereamiDS, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("%s: deleting %s: %v", cluster, whereamiDS, err)
		}
	})
	if !slices.Equal(svc.Spec.IPFamilies, families()) || len(svc.Spec.ClusterIPs) != 2 {
		t.Fatalf("%s: PreferDualStack Service: families %v, ClusterIPs %v; want one of each, IPv4 first", cluster, svc.Spec.IPFamilies, svc.Spec.ClusterIPs)
	}
	return svc
}

// clusterSetIPs waits until the ServiceImport name in cluster lists the families
// [IPv4, IPv6] and a clusterset IP of each, the cluster IPs of the Service the hub
// derived for it there, and returns them.
func clusterSetIPs(t *testing.T, cluster, name string) []netip.Addr {
	t.Helper()
	c := env.Client(t, cluster)
	ctx := context.Background()
	var out []netip.Addr
	require.Eventually(t, labtest.Converge, cluster+": the clusterset IPs of "+name, func() error {
		imp := &mcsv1.ServiceImport{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: lab.SampleNamespace, Name: name}, imp); err != nil {
			return err
		}
		svc, err := env.HostClient(t, cluster).CoreV1().Services(lab.SampleNamespace).Get(ctx, plan.DerivedServiceName(name), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !slices.Equal(imp.Spec.IPFamilies, families()) || !slices.Equal(imp.Spec.IPs, svc.Spec.ClusterIPs) || len(imp.Spec.IPs) != 2 {
			return fmt.Errorf("ServiceImport families %v, spec.ips %v; derived Service %s's cluster IPs %v",
				imp.Spec.IPFamilies, imp.Spec.IPs, svc.Name, svc.Spec.ClusterIPs)
		}
		out = nil
		for _, ip := range imp.Spec.IPs {
			a, err := netip.ParseAddr(ip)
			if err != nil {
				return err
			}
			out = append(out, a)
		}
		if !out[0].Is4() || !out[1].Is6() {
			return fmt.Errorf("spec.ips %v: want IPv4 then IPv6", out)
		}
		return nil
	})
	return out
}

// podIPs are a dual-stack pod's addresses: IPv4 then IPv6.
func podIPs(t *testing.T, p corev1.Pod) []netip.Addr {
	t.Helper()
	var out []netip.Addr
	for _, ip := range p.Status.PodIPs {
		if a, err := netip.ParseAddr(ip.IP); err == nil {
			out = append(out, a)
		}
	}
	if len(out) != 2 || !out[0].Is4() || !out[1].Is6() {
		t.Fatalf("pod %s: addresses %v, want an IPv4 then an IPv6 one", p.Name, p.Status.PodIPs)
	}
	return out
}

// sourcePod is the pod behind a source.
func sourcePod(t *testing.T, cluster string, src labtest.Source) corev1.Pod {
	t.Helper()
	p, err := env.HostClient(t, cluster).CoreV1().Pods(lab.SampleNamespace).Get(context.Background(), src.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *p
}

// listedCIDRs are the pod then service CIDRs the lab's ClusterSet lists for cluster.
func listedCIDRs(t *testing.T, cluster string) []netip.Prefix {
	t.Helper()
	var out []netip.Prefix
	for _, c := range env.ClusterSet(t).Spec.Clusters {
		if c.Name == cluster {
			for _, s := range slices.Concat(c.PodCIDRs, c.ServiceCIDRs) {
				out = append(out, netip.MustParsePrefix(s))
			}
		}
	}
	return out
}
