package join

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// csName is whereami-cs's clusterset name.
const csName = "whereami-cs.sample.svc.clusterset.local"

// connections is how many connections a balance check makes: enough that each of two
// clusters answering a fair share below 30% is out of the question (p < 1e-10 at 50%).
const connections = 300

// threeJoined makes the lab the clusterset IP tests' trio, as a person would, unless it
// is one already: c3 in the ClusterSet (strait join --install with the overlay the lab
// installs from: the join tests before leave Strait installed in c3 and c3 out of git)
// and whereami-cs exported from c1 and c2 (strait export), in one commit that Flux
// applies; then the hub connected to c3 and every cable Connected. c3 exports nothing of
// whereami-cs: from c3 neither export is local.
func threeJoined(t *testing.T) {
	t.Helper()
	exporters := func() []string {
		for _, e := range env.ClusterSet(t).Spec.Exports {
			if e.Namespace == lab.SampleNamespace && e.Name == lab.WhereamiCS {
				return slices.Sorted(slices.Values(e.Clusters))
			}
		}
		return nil
	}
	if connected(t) == nil && slices.Equal(exporters(), []string{"c1", "c2"}) {
		return
	}
	file := filepath.Join(t.TempDir(), "clusterset.yaml")
	if err := os.WriteFile(file, env.RepoClusterSet(t), 0o644); err != nil {
		t.Fatal(err)
	}
	if hubCluster(t, "c3") == nil {
		c3, _ := env.Topo.Cluster("c3")
		server := "https://" + net.JoinHostPort(c3.ControlPlane.LANAddr.Addr().String(), strconv.Itoa(topology.APIPort))
		if _, _, code := strait(t, "join", "c3", "--kubeconfig", env.Lab.State().KubeconfigPath("c3"), "--server", server,
			"--hub-kubeconfig", env.Lab.State().KubeconfigPath(topology.HubName), "--install", env.Lab.InstallDir("c3"), "-f", file); code != 0 {
			t.Fatalf("strait join c3 --install: exit %d", code)
		}
	}
	if _, _, code := strait(t, "export", "sample/"+lab.WhereamiCS, "--clusters", "c1,c2", "-f", file); code != 0 {
		t.Fatalf("strait export sample/%s --clusters c1,c2: exit %d", lab.WhereamiCS, code)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.CommitClusterSet(t, data, "clusterset: c3 joins, c1 and c2 export whereami-cs"); err != nil {
		t.Fatalf("Flux did not apply the trio: %v", err)
	}
	threeConnected(t)
}

// clusterIP is whereami-cs's ClusterIP in a cluster.
func clusterIP(t *testing.T, cluster string) string {
	t.Helper()
	svc, err := env.HostClient(t, cluster).CoreV1().Services(lab.SampleNamespace).Get(context.Background(), lab.WhereamiCS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// serviceCIDR is a cluster's service CIDR in the lab.
func serviceCIDR(t *testing.T, cluster string) netip.Prefix {
	t.Helper()
	c, ok := env.Topo.Cluster(cluster)
	if !ok {
		t.Fatalf("no cluster %s in the lab", cluster)
	}
	return c.ServiceCIDR
}

// TestClusterSetIPBalancesOverBothClusters: from c3, which exports nothing, the
// clusterset name answers the import's clusterset IP, an address of c3's own service
// CIDR, and kube-proxy spreads connections to it over the pods of c1 and c2, each
// seeing the caller's own pod IP.
func TestClusterSetIPBalancesOverBothClusters(t *testing.T) {
	env.Require(t)
	threeJoined(t)
	ns, clientIP := env.ClientNamespace(t, "c3")
	ip := env.ClusterSetIP(t, "c3", lab.WhereamiCS)
	if !serviceCIDR(t, "c3").Contains(netip.MustParseAddr(ip)) {
		t.Fatalf("c3's clusterset IP %s is not in c3's service CIDR %s", ip, serviceCIDR(t, "c3"))
	}
	require.Eventually(t, labtest.Converge, "c3: "+csName+" answers the clusterset IP", func() error {
		ips, err := labtest.LookupInPod(context.Background(), ns, csName)
		if err == nil && !slices.Equal(ips, []string{ip}) {
			err = fmt.Errorf("= %v, want [%s]", ips, ip)
		}
		return err
	})
	derivedSlicesHold(t, "c3", "c1", "c2")
	start := time.Now()
	s := labtest.Connect(connections, func() (workload.Answer, error) {
		return labtest.TryWhereami(ns, net.JoinHostPort(ip, "80"))
	})
	t.Logf("c3 → %s:80, %d connections in %s: %s", ip, connections, time.Since(start).Round(time.Millisecond), s)
	s.CheckBalanced(t, 0.3, "c1", "c2")
	if len(s.Pods) != 4 {
		t.Errorf("answered by pods %v, want c1's and c2's two whereami-cs pods each", s.Pods)
	}
	if len(s.Callers) != 1 || s.Callers[clientIP.String()] == 0 {
		t.Errorf("whereami saw callers %v, want c3's client pod %s alone", s.Callers, clientIP)
	}
}

// TestUDPThroughTheClusterSetIP: a UDP service exported from c1 and c2 gets a clusterset
// IP in c3 that answers datagrams from both clusters' pods.
func TestUDPThroughTheClusterSetIP(t *testing.T) {
	env.Require(t)
	threeJoined(t)
	const svc = "whereami-udp"
	env.RestoreClusterSetSpec(t)
	for _, c := range []string{"c1", "c2"} {
		services := env.HostClient(t, c).CoreV1().Services(lab.SampleNamespace)
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: lab.SampleNamespace},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": lab.WhereamiCS}, Ports: []corev1.ServicePort{
				{Name: "whereami", Protocol: corev1.ProtocolUDP, Port: 5353, TargetPort: intstr.FromInt32(workload.WhereamiPort)}}}}
		if _, err := services.Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = services.Delete(context.Background(), svc, metav1.DeleteOptions{}) })
	}
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: lab.SampleNamespace, Name: svc, Clusters: []string{"c1", "c2"}})
	}); err != nil {
		t.Fatal(err)
	}
	ip := env.ClusterSetIP(t, "c3", svc)
	ns, _ := env.ClientNamespace(t, "c3")
	require.Eventually(t, labtest.Converge, "c3: c1 and c2 in the derived slices of "+svc, func() error {
		got, err := env.DerivedSliceClusters(t, "c3", svc)
		if err == nil && !slices.Equal(got, []string{"c1", "c2"}) {
			err = fmt.Errorf("derived slices hold %v", got)
		}
		return err
	})
	hostPort := net.JoinHostPort(ip, "5353")
	require.Eventually(t, labtest.Converge, "c3 → "+hostPort+"/udp answers", func() error {
		_, err := labtest.TryWhereamiUDP(ns, hostPort)
		return err
	})
	const n = 100
	s := labtest.Connect(n, func() (workload.Answer, error) { return labtest.TryWhereamiUDP(ns, hostPort) })
	t.Logf("c3 → %s/udp, %d datagrams, each from a new socket: %s", hostPort, n, s)
	s.CheckBalanced(t, 0.25, "c1", "c2")
}

// setAffinity sets whereami-cs's session affinity in a cluster.
func setAffinity(t *testing.T, cluster string, affinity corev1.ServiceAffinity) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"sessionAffinity":%q}}`, affinity)
	if affinity == corev1.ServiceAffinityNone {
		patch = `{"spec":{"sessionAffinity":"None","sessionAffinityConfig":null}}`
	}
	if _, err := env.HostClient(t, cluster).CoreV1().Services(lab.SampleNamespace).Patch(context.Background(), lab.WhereamiCS,
		types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// derivedAffinity waits until whereami-cs's derived Service in c3 has the affinity.
func derivedAffinity(t *testing.T, affinity corev1.ServiceAffinity) {
	t.Helper()
	require.Eventually(t, labtest.Converge, "c3: the derived Service's session affinity "+string(affinity), func() error {
		svc, err := env.HostClient(t, "c3").CoreV1().Services(lab.SampleNamespace).Get(context.Background(),
			plan.DerivedServiceName(lab.WhereamiCS), metav1.GetOptions{})
		if err == nil && svc.Spec.SessionAffinity != affinity {
			err = fmt.Errorf("is %s", svc.Spec.SessionAffinity)
		}
		return err
	})
}

// TestSessionAffinityHolds: whereami-cs with ClientIP affinity in both exporting
// clusters: from c3 every connection to the clusterset IP reaches the same pod.
func TestSessionAffinityHolds(t *testing.T) {
	env.Require(t)
	threeJoined(t)
	for _, c := range []string{"c1", "c2"} {
		setAffinity(t, c, corev1.ServiceAffinityClientIP)
	}
	t.Cleanup(func() {
		for _, c := range []string{"c1", "c2"} {
			setAffinity(t, c, corev1.ServiceAffinityNone)
		}
		derivedAffinity(t, corev1.ServiceAffinityNone)
	})
	derivedAffinity(t, corev1.ServiceAffinityClientIP)
	ip := env.ClusterSetIP(t, "c3", lab.WhereamiCS)
	ns, _ := env.ClientNamespace(t, "c3")
	// kube-proxy applies the affinity within a sync of the Service's change.
	time.Sleep(2 * time.Second)
	s := labtest.Connect(50, func() (workload.Answer, error) { return labtest.TryWhereami(ns, net.JoinHostPort(ip, "80")) })
	t.Logf("c3 → %s:80 with ClientIP affinity, 50 connections: %s", ip, s)
	if len(s.Failed) > 0 || len(s.Pods) != 1 {
		t.Errorf("answered by %v (%d failed), want one pod for every connection", s.Pods, len(s.Failed))
	}
}

// TestClusterLeavingTheExportDropsOut: c1 taken out of whereami-cs's export (a commit
// pushed) leaves c3's derived slices within seconds, and from then on c2 alone answers
// the clusterset IP, which stays the same; put back, c1 answers again.
func TestClusterLeavingTheExportDropsOut(t *testing.T) {
	env.Require(t)
	threeJoined(t)
	env.RestoreClusterSetSpec(t)
	ip := env.ClusterSetIP(t, "c3", lab.WhereamiCS)
	ns, _ := env.ClientNamespace(t, "c3")
	data := labtest.ChangeClusterSet(t, env.RepoClusterSet(t), labtest.ExportWhereamiFrom("c2"))
	start := time.Now()
	commit := env.PushClusterSet(t, data, "e2e: c1 stops exporting whereami-cs")
	took := derivedSlicesHold(t, "c3", "c2")
	t.Logf("push → c1 out of c3's derived slices: %s", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("c1 left c3's derived slices %s after the push, want within 10 s", took.Round(time.Millisecond))
	}
	// kube-proxy follows the slices within its sync; then every connection is c2's.
	var s labtest.Spread
	require.Eventually(t, 10*time.Second, "c3 → the clusterset IP: c2 alone", func() error {
		s = labtest.Connect(50, func() (workload.Answer, error) { return labtest.TryWhereami(ns, net.JoinHostPort(ip, "80")) })
		if len(s.Failed) > 0 || s.Clusters["c2"] != 50 {
			return fmt.Errorf("%s", s)
		}
		return nil
	})
	t.Logf("push → 50 connections in a row answered by c2 alone: %s", time.Since(start).Round(time.Millisecond))
	if err := env.WaitSynced(t, commit); err != nil {
		t.Fatal(err)
	}
	if again := env.ClusterSetIP(t, "c3", lab.WhereamiCS); again != ip {
		t.Errorf("the clusterset IP moved from %s to %s when c1 left the export", ip, again)
	}
	if err := env.UpdateClusterSet(t, labtest.ExportWhereamiFrom("c1", "c2")); err != nil {
		t.Fatal(err)
	}
	require.Eventually(t, labtest.Converge, "c3 → the clusterset IP: c1 answers again", func() error {
		a, err := labtest.TryWhereami(ns, net.JoinHostPort(ip, "80"))
		if err == nil && a.Cluster != "c1" {
			err = fmt.Errorf("answered by %s", a.Cluster)
		}
		return err
	})
}

// TestLocalFirstAnswersOneCluster: with spec.dns.serviceAnswer LocalFirst the
// clusterset name answers as before the clusterset IP: in c1, which exports, c1's own
// ClusterIP every time; in c3, which does not, c1's and c2's ClusterIPs in turn.
func TestLocalFirstAnswersOneCluster(t *testing.T) {
	env.Require(t)
	threeJoined(t)
	env.RestoreClusterSetSpec(t)
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.DNS.ServiceAnswer = straitv1.ServiceAnswerLocalFirst
	}); err != nil {
		t.Fatal(err)
	}
	c1, _ := env.ClientNamespace(t, "c1")
	own := clusterIP(t, "c1")
	require.Eventually(t, labtest.Converge, "c1: "+csName+" answers c1's own ClusterIP", func() error {
		ips, err := labtest.LookupInPod(context.Background(), c1, csName)
		if err == nil && !slices.Equal(ips, []string{own}) {
			err = fmt.Errorf("= %v, want [%s]", ips, own)
		}
		return err
	})
	for i := range 10 {
		if ips, err := labtest.LookupInPod(context.Background(), c1, csName); err != nil || !slices.Equal(ips, []string{own}) {
			t.Fatalf("lookup %d from c1: %v %v, want c1's own %s", i, ips, err, own)
		}
	}
	c3, _ := env.ClientNamespace(t, "c3")
	want := []string{clusterIP(t, "c1"), clusterIP(t, "c2")}
	seen := map[string]bool{}
	require.Eventually(t, labtest.Converge, "c3: "+csName+" answers both exporting clusters in turn", func() error {
		ips, err := labtest.LookupInPod(context.Background(), c3, csName)
		if err != nil {
			return err
		}
		if len(ips) != 1 || !slices.Contains(want, ips[0]) {
			return fmt.Errorf("= %v, want one of %v", ips, want)
		}
		seen[ips[0]] = true
		if len(seen) < 2 {
			return fmt.Errorf("only %v so far", seen)
		}
		return nil
	})
}

// scaleWhereami sets the replicas of whereami-cs's Deployment in a cluster.
func scaleWhereami(t *testing.T, cluster string, replicas int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := env.HostClient(t, cluster).AppsV1().Deployments(lab.SampleNamespace).Patch(context.Background(), lab.WhereamiCS,
		types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// derivedSlicesHold waits until a cluster's derived slices of whereami-cs hold exactly
// the ready endpoints of clusters.
func derivedSlicesHold(t *testing.T, cluster string, clusters ...string) time.Duration {
	t.Helper()
	return require.Eventually(t, labtest.Converge, fmt.Sprintf("%s: the derived slices hold %v", cluster, clusters), func() error {
		got, err := env.DerivedSliceClusters(t, cluster, lab.WhereamiCS)
		if err == nil && !slices.Equal(got, clusters) {
			err = fmt.Errorf("they hold %v", got)
		}
		return err
	})
}

// TestPreferLocalKeepsAnExportingClusterLocal: with clusterSetIP PreferLocal on the
// export, c1's clusterset IP leads to c1's own pods while one is ready, c3's (which
// does not export) to both clusters; c1's pods gone, c1 fails over to c2 within
// seconds, and comes back once its pods are ready again.
func TestPreferLocalKeepsAnExportingClusterLocal(t *testing.T) {
	env.Require(t)
	threeJoined(t)
	env.RestoreClusterSetSpec(t)
	t.Cleanup(func() { scaleWhereami(t, "c1", 2) })
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		for i := range cs.Spec.Exports {
			if cs.Spec.Exports[i].Name == lab.WhereamiCS {
				cs.Spec.Exports[i].ClusterSetIP = straitv1.ClusterSetIPPreferLocal
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	c1, _ := env.ClientNamespace(t, "c1")
	ip := env.ClusterSetIP(t, "c1", lab.WhereamiCS)
	get := func() (workload.Answer, error) { return labtest.TryWhereami(c1, net.JoinHostPort(ip, "80")) }
	derivedSlicesHold(t, "c1", "c1")
	derivedSlicesHold(t, "c3", "c1", "c2")
	var s labtest.Spread
	require.Eventually(t, 10*time.Second, "c1 → its clusterset IP: c1 alone", func() error {
		if s = labtest.Connect(50, get); len(s.Failed) > 0 || s.Clusters["c1"] != 50 {
			return fmt.Errorf("%s", s)
		}
		return nil
	})
	t.Logf("c1 → %s:80 with PreferLocal, 50 connections: %s", ip, s)

	start := time.Now()
	scaleWhereami(t, "c1", 0)
	took := derivedSlicesHold(t, "c1", "c2")
	t.Logf("c1's whereami-cs scaled to 0 → c2 alone in c1's derived slices: %s", took.Round(time.Millisecond))
	if took > 15*time.Second {
		t.Errorf("c1 failed over to c2 %s after its pods were scaled away, want within 15 s", took.Round(time.Millisecond))
	}
	require.Eventually(t, 10*time.Second, "c1 → its clusterset IP: c2 answers", func() error {
		if s = labtest.Connect(20, get); len(s.Failed) > 0 || s.Clusters["c2"] != 20 {
			return fmt.Errorf("%s", s)
		}
		return nil
	})
	t.Logf("scale to 0 → 20 connections in a row answered by c2: %s", time.Since(start).Round(time.Millisecond))

	scaleWhereami(t, "c1", 2)
	took = derivedSlicesHold(t, "c1", "c1")
	t.Logf("c1's whereami-cs scaled back → c1 alone again: %s", took.Round(time.Millisecond))
}
