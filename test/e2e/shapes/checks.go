package shapes

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// ClusterSet is the manifest the shapes lab runs: c1, c2 and c3 all export whereami, so
// every cluster both sends and receives traffic between clusters.
const ClusterSet = "test/e2e/shapes/testdata/clusterset.yaml"

// spreadConnections is how many connections to a clusterset IP ClustersetNamesAnswer
// makes. kube-proxy picks at random among the pods behind it, two in each of three
// clusters: a cluster answers fewer than a tenth of 100 with a chance of 1.1e-8 (3.4e-8
// for any of the three).
const spreadConnections = 100

// Across is what a user of each cluster checks of another, in every direction of
// edges, from a pod on a plain node and from one on a gateway node: the remote pod and
// ClusterIP answer and see the caller's own pod IP, and the clusterset.local names
// answer (ClusterSetIP and headless, with and without a cluster).
func Across(t *testing.T, env *labtest.Env, edges []Edge) {
	t.Helper()
	exporters := ExportingClusters(t, env)
	for _, e := range edges {
		from, to := e.From, e.To
		remote := env.PodOn(t, to, env.NodeOfKind(t, to, false), labtest.WhereamiImage)
		sources := env.SourcePods(t, from)
		for _, src := range sources {
			// The first connection waits for the clusterset to have converged.
			var a workload.Answer
			require.Eventually(t, labtest.Converge, fmt.Sprintf("%s → %s's pod %s", src.Name, to, remote.Status.PodIP), func() (err error) {
				a, err = labtest.TryWhereami(src.NS, net.JoinHostPort(remote.Status.PodIP, "8080"))
				return err
			})
			t.Logf("figure: %s → %s from %s on %s (gateway node %v): caller seen %s, the pod's own %s", from, to, src.Name, src.Node, src.Gateway, a.Caller, src.IP)
			env.CheckAcross(t, src, to, remote)
		}
		ClustersetNamesAnswer(t, env, sources[0], from, exporters)
	}
}

// ExportingClusters are the clusters the lab's ClusterSet exports whereami-cs and
// whereami-ss from (the checks want both from the same clusters; an export without
// clusters is every member's).
func ExportingClusters(t *testing.T, env *labtest.Env) []string {
	t.Helper()
	cs := env.ClusterSet(t)
	var members []string
	for _, c := range cs.Spec.Clusters {
		members = append(members, c.Name)
	}
	var out [][]string
	for _, name := range []string{lab.WhereamiCS, lab.WhereamiSS} {
		i := slices.IndexFunc(cs.Spec.Exports, func(x straitv1.ExportSpec) bool {
			return x.Namespace == lab.SampleNamespace && x.Name == name
		})
		if i < 0 {
			t.Fatalf("the ClusterSet exports no %s/%s", lab.SampleNamespace, name)
		}
		from := slices.Clone(cs.Spec.Exports[i].Clusters)
		if len(from) == 0 {
			from = slices.Clone(members)
		}
		slices.Sort(from)
		out = append(out, from)
	}
	if !slices.Equal(out[0], out[1]) {
		t.Fatalf("the ClusterSet exports %s from %v and %s from %v: the checks want both from the same clusters", lab.WhereamiCS, out[0], lab.WhereamiSS, out[1])
	}
	return out[0]
}

// ClustersetNamesAnswer checks the clusterset.local names without a cluster from src, a
// pod of cluster from, every cluster of exporters exporting: whereami-cs resolves to
// from's clusterset IP (the derived Service's cluster IP, in from's service CIDR),
// whose connections reach the pods of every exporting cluster with the caller's pod IP
// kept, and whereami-ss (headless) lists every ready whereami-ss pod of every exporting
// cluster, each of the other clusters' answering with the caller's pod IP.
func ClustersetNamesAnswer(t *testing.T, env *labtest.Env, src labtest.Source, from string, exporters []string) {
	t.Helper()
	cs := lab.WhereamiCS + "." + lab.SampleNamespace + ".svc.clusterset.local"
	headless := lab.WhereamiSS + "." + lab.SampleNamespace + ".svc.clusterset.local"
	ip := env.ClusterSetIP(t, from, lab.WhereamiCS)
	require.Eventually(t, labtest.Converge, src.Name+": "+cs+" answers the clusterset IP", func() error {
		ips, err := labtest.LookupInPod(context.Background(), src.NS, cs)
		if err == nil && !slices.Equal(ips, []string{ip}) {
			err = fmt.Errorf("= %v, want [%s]", ips, ip)
		}
		return err
	})
	spread := labtest.Connect(spreadConnections, func() (workload.Answer, error) {
		return labtest.TryWhereami(src.NS, net.JoinHostPort(ip, "80"))
	})
	t.Logf("%s → %s (%s): %s", src.Name, cs, ip, spread)
	spread.CheckBalanced(t, 0.1, exporters...)
	if len(spread.Callers) != 1 || spread.Callers[src.IP] == 0 {
		t.Errorf("%s → %s: whereami saw callers %v, want the caller's pod IP %s alone", src.Name, cs, spread.Callers, src.IP)
	}
	var want []string
	remote := map[string][]string{} // the other clusters' ready pods
	for _, c := range exporters {
		ips := readyIPs(env.SamplePods(t, c, lab.WhereamiSS))
		want = append(want, ips...)
		if c != from {
			remote[c] = ips
		}
	}
	slices.Sort(want)
	var ips []string
	require.Eventually(t, labtest.Converge, src.Name+": "+headless, func() (err error) {
		if ips, err = labtest.LookupInPod(context.Background(), src.NS, headless); err != nil {
			return err
		}
		got := slices.Sorted(slices.Values(ips))
		if !slices.Equal(got, want) {
			return fmt.Errorf("%v, want every ready whereami-ss pod of %v: %v", got, exporters, want)
		}
		return nil
	})
	t.Logf("%s → %s: %v", src.Name, headless, ips)
	for _, c := range exporters {
		for _, ip := range remote[c] {
			if a, err := labtest.TryWhereami(src.NS, net.JoinHostPort(ip, "8080")); err != nil || a.Cluster != c || a.Caller != src.IP {
				t.Errorf("%s → %s's %s (%s): %+v, %v; want %s answering the caller's pod IP %s", src.Name, c, headless, ip, a, err, c, src.IP)
			}
		}
	}
}

// readyIPs are the pod IPs of the ready pods: what a headless service publishes.
func readyIPs(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		if lab.PodReady(&p) == "Ready" && p.Status.PodIP != "" {
			out = append(out, p.Status.PodIP)
		}
	}
	return out
}

// OwnNetworkingIsUnchanged checks that Strait takes nothing from a cluster's own
// networking: a pod reaches a pod on another node and its own ClusterIP without being
// masqueraded, its traffic to the internet is masqueraded to its node's address, and
// the CNI's masquerade is on every node.
func OwnNetworkingIsUnchanged(t *testing.T, env *labtest.Env) {
	for _, c := range env.Topo.Clusters {
		t.Run(c.Name, func(t *testing.T) {
			src := env.SourcePods(t, c.Name)[0] // on a plain node
			server := env.PodOn(t, c.Name, env.NodeOfKind(t, c.Name, true), labtest.WhereamiImage)
			if a, err := labtest.TryWhereami(src.NS, net.JoinHostPort(server.Status.PodIP, "8080")); err != nil || a.Caller != src.IP {
				t.Errorf("%s → %s on %s: %+v, %v; want the caller's pod IP %s", src.Name, server.Name, server.Spec.NodeName, a, err, src.IP)
			}
			svc, err := env.HostClient(t, c.Name).CoreV1().Services(lab.SampleNamespace).Get(context.Background(), lab.WhereamiCS, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if a, err := labtest.TryWhereami(src.NS, net.JoinHostPort(svc.Spec.ClusterIP, "80")); err != nil || a.Caller != src.IP || a.Cluster != c.Name {
				t.Errorf("%s → its own ClusterIP %s: %+v, %v; want %s answering the caller's pod IP %s", src.Name, svc.Spec.ClusterIP, a, err, c.Name, src.IP)
			}
			// The internet sees the node's address: the CNI masquerades as it did before
			// Strait came.
			echo := net.JoinHostPort(env.Topo.Internet.Addr.String(), strconv.Itoa(topology.EchoPort))
			var node netip.Addr
			for _, n := range c.Nodes {
				if n.Name == src.Node {
					node = n.LANAddr.Addr()
				}
			}
			if a, err := labtest.TryWhereami(src.NS, echo); err != nil || a.Caller != node.String() {
				t.Errorf("%s → the internet %s: %+v, %v; want the caller masqueraded to its node's address %s", src.Name, echo, a, err, node)
			}
			for _, n := range c.Nodes {
				if out, err := Masquerade(c, n); err != nil || !strings.Contains(out, "masquerade") && !strings.Contains(out, "MASQUERADE") {
					t.Errorf("%s: the CNI's masquerade is missing: %v\n%s", n.Name, err, out)
				}
			}
			NodePortAnswers(t, env, c, src)
		})
	}
}

// NodePortName is the NodePort Service NodePortAnswers puts in front of whereami-cs.
const NodePortName = "e2e-whereami-nodeport"

// NodePortAnswers checks that a NodePort Service of the cluster (in front of
// whereami-cs, made on first use) answers on a gateway node's address, from the pod src
// on a plain node and from that plain node itself, as kube-proxy serves it.
func NodePortAnswers(t *testing.T, env *labtest.Env, c topology.Cluster, src labtest.Source) {
	t.Helper()
	svcs := env.HostClient(t, c.Name).CoreV1().Services(lab.SampleNamespace)
	ctx := context.Background()
	svc, err := svcs.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: NodePortName, Namespace: lab.SampleNamespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": lab.WhereamiCS},
			Ports: []corev1.ServicePort{{Name: "main", Port: 80, TargetPort: intstr.FromInt32(workload.WhereamiPort), Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		svc, err = svcs.Get(ctx, NodePortName, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	var plain, gateway topology.Node
	for _, n := range c.Nodes {
		if n.Name == src.Node {
			plain = n
		}
		if n.Gateway && gateway.Name == "" {
			gateway = n
		}
	}
	target := net.JoinHostPort(gateway.LANAddr.Addr().String(), strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))
	for _, from := range []struct{ name, ns string }{{"pod " + src.Name, src.NS}, {"node " + plain.Name, plain.Namespace}} {
		// kube-proxy programs a new Service within a second or two.
		require.Eventually(t, 30*time.Second, fmt.Sprintf("%s: %s → NodePort %s on %s", c.Name, from.name, target, gateway.Name), func() error {
			a, err := labtest.TryWhereami(from.ns, target)
			if err == nil && a.Cluster != c.Name {
				err = fmt.Errorf("answered by %s, want %s", a.Cluster, c.Name)
			}
			return err
		})
	}
}

// masqueradeOf is how a CNI's masquerade is listed and removed on a node, by CNI and
// backend: iptables(8) or nft(8) arguments.
func masqueradeOf(s topology.ClusterShape) (list, remove []string) {
	switch {
	case s.CNI == topology.CNIFlannel && s.Masquerade == topology.MasqueradeNFTables:
		return []string{"nft", "list", "table", "ip", "flannel-ipv4"}, []string{"nft", "delete", "table", "ip", "flannel-ipv4"}
	case s.CNI == topology.CNIFlannel:
		return []string{"iptables", "-w", "-t", "nat", "-S", "FLANNEL-POSTRTG"}, []string{"iptables", "-w", "-t", "nat", "-F", "FLANNEL-POSTRTG"}
	case s.Masquerade == topology.MasqueradeNFTables:
		return []string{"nft", "list", "table", "ip", "kindnet-masq"}, []string{"nft", "delete", "table", "ip", "kindnet-masq"}
	default:
		return []string{"iptables", "-w", "-t", "nat", "-S", "KIND-MASQ-AGENT"}, []string{"iptables", "-w", "-t", "nat", "-F", "KIND-MASQ-AGENT"}
	}
}

// Masquerade lists the CNI's masquerade rules on a node.
func Masquerade(c topology.Cluster, n topology.Node) (string, error) {
	list, _ := masqueradeOf(c.Shape)
	return netns.Exec(context.Background(), n.Namespace, "", list...)
}

// BypassSurvivesRewrites removes every CNI masquerade rule and kills every kube-proxy,
// on every node of every cluster, then lets them come back as they do in a cluster: a
// restarted flanneld writes its rules anew, kindnet's come back with lab up (kindnet's
// resync), as does kube-proxy, which writes all its rules anew. Traffic between
// clusters then still keeps the caller, in every direction of edges (Across).
func BypassSurvivesRewrites(t *testing.T, env *labtest.Env, edges []Edge) {
	ctx := context.Background()
	for _, c := range env.Topo.Clusters {
		_, remove := masqueradeOf(c.Shape)
		for _, n := range c.Nodes {
			if _, err := netns.Exec(ctx, n.Namespace, "", remove...); err != nil {
				t.Fatalf("%s: %v", n.Name, err)
			}
			pid := labtest.DaemonPid(n.Namespace, "kube-proxy")
			if pid == 0 {
				t.Fatalf("no kube-proxy runs in %s", n.Namespace)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			require.Eventually(t, 10*time.Second, n.Name+": kube-proxy gone", func() error {
				if netns.Alive(pid) {
					return fmt.Errorf("pid %d still runs", pid)
				}
				return nil
			})
		}
	}
	for _, c := range env.Topo.Clusters {
		if c.Shape.CNI == topology.CNIFlannel {
			// flanneld writes its rules anew when it starts, as after an upgrade.
			if err := env.HostClient(t, c.Name).CoreV1().Pods("kube-flannel").DeleteCollection(ctx, metav1.DeleteOptions{},
				metav1.ListOptions{LabelSelector: "app=flannel"}); err != nil {
				t.Fatalf("%s: restarting flanneld: %v", c.Name, err)
			}
		}
	}
	env.UpAgain(t)
	for _, c := range env.Topo.Clusters {
		for _, n := range c.Nodes {
			require.Eventually(t, 2*time.Minute, n.Name+": the CNI's masquerade back", func() error {
				out, err := Masquerade(c, n)
				if err == nil && !strings.Contains(out, "masquerade") && !strings.Contains(out, "MASQUERADE") {
					err = fmt.Errorf("no masquerade rule:\n%s", out)
				}
				return err
			})
		}
	}
	Across(t, env, edges)
}
