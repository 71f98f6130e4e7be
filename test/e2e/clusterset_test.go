package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// clusterIP is the ClusterIP of a sample service in a cluster.
func clusterIP(t testing.TB, cluster, name string) string {
	t.Helper()
	svc, err := env.HostClient(t, cluster).CoreV1().Services(lab.SampleNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// resolvesTo waits until name, looked up from the cluster's client pod, answers want.
func resolvesTo(t testing.TB, cluster, name string, want []string) time.Duration {
	t.Helper()
	ns, _ := env.ClientNamespace(t, cluster)
	return require.Eventually(t, labtest.Converge, cluster+": "+name, func() error {
		got, err := labtest.LookupInPod(context.Background(), ns, name)
		if err != nil {
			return err
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("= %v; want %v", got, want)
		}
		return nil
	})
}

// resolved waits until name, looked up from the cluster's client pod, answers: with its
// clusterset IP, or for the moment before strait dns has written that, the exporting
// cluster's own address.
func resolved(t testing.TB, cluster, name string) time.Duration {
	t.Helper()
	ns, _ := env.ClientNamespace(t, cluster)
	return require.Eventually(t, labtest.Converge, cluster+": "+name, func() error {
		_, err := labtest.LookupInPod(context.Background(), ns, name)
		return err
	})
}

// gone waits until name no longer resolves from the cluster's client pod.
func gone(t testing.TB, cluster, name string) time.Duration {
	t.Helper()
	ns, _ := env.ClientNamespace(t, cluster)
	return require.Eventually(t, labtest.Converge, cluster+": "+name+" gone", func() error {
		if got, err := labtest.LookupInPod(context.Background(), ns, name); err == nil {
			return fmt.Errorf("still resolves to %v", got)
		}
		return nil
	})
}

// answeredBy GETs hostPort from the cluster's client pod until it is answered by want.
func answeredBy(t testing.TB, cluster, hostPort, want string) {
	t.Helper()
	ns, _ := env.ClientNamespace(t, cluster)
	require.Eventually(t, labtest.Converge, cluster+" → "+hostPort, func() error {
		a, err := labtest.TryWhereami(ns, hostPort)
		if err == nil && a.Cluster != want {
			err = fmt.Errorf("answered by %s, want %s", a.Cluster, want)
		}
		return err
	})
}

// TestBothClustersExport: when c1 and c2 both export whereami-cs, connections to the
// clusterset IP from either cluster reach the pods of both, and the cluster-qualified
// name reaches the other's own service.
func TestBothClustersExport(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	if err := env.UpdateClusterSet(t, labtest.ExportWhereamiFrom("c1", "c2")); err != nil {
		t.Fatal(err)
	}
	const name = "whereami-cs.sample.svc.clusterset.local"
	for _, cluster := range members() {
		other := "c1"
		if cluster == "c1" {
			other = "c2"
		}
		ns, _ := env.ClientNamespace(t, cluster)
		ip := env.ClusterSetIP(t, cluster, lab.WhereamiCS)
		resolvesTo(t, cluster, name, []string{ip})
		require.Eventually(t, labtest.Converge, cluster+": both clusters in the derived slices", func() error {
			got, err := env.DerivedSliceClusters(t, cluster, lab.WhereamiCS)
			if err == nil && !slices.Equal(got, []string{"c1", "c2"}) {
				err = fmt.Errorf("derived slices hold %v", got)
			}
			return err
		})
		try := func() (workload.Answer, error) { return labtest.TryWhereami(ns, net.JoinHostPort(ip, "80")) }
		// kube-proxy programs the slices a moment after the hub writes them (a sync took
		// seconds on a loaded 2-core machine, and c1's 100 connections all went to c2):
		// both clusters answering first, then the count.
		require.Eventually(t, labtest.Converge, cluster+" → its clusterset IP reaches both clusters", func() error {
			if s := labtest.Connect(20, try); s.Clusters["c1"] == 0 || s.Clusters["c2"] == 0 {
				return fmt.Errorf("%s", s)
			}
			return nil
		})
		s := labtest.Connect(100, try)
		t.Logf("%s → its clusterset IP %s, 100 connections: %s", cluster, ip, s)
		s.CheckBalanced(t, 0.2, "c1", "c2")
		resolvesTo(t, cluster, other+"."+name, []string{clusterIP(t, other, lab.WhereamiCS)})
		answeredBy(t, cluster, other+"."+name+":80", other)
	}
}

// exportNew creates a Service in c2 in front of the whereami pods, on port 80, and
// removes it when the test ends.
func exportNew(t testing.TB, name string) {
	t.Helper()
	svcs := env.HostClient(t, "c2").CoreV1().Services(lab.SampleNamespace)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: lab.SampleNamespace},
		Spec: corev1.ServiceSpec{Selector: env.SamplePods(t, "c2", lab.WhereamiCS)[0].Labels,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(workload.WhereamiPort)}}}}
	if _, err := svcs.Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svcs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func setExport(t testing.TB, name string, on bool) {
	t.Helper()
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) { withExport(cs, name, on) }); err != nil {
		t.Fatal(err)
	}
}

// withExport adds the export of c2's sample service name to cs (on) or removes it.
func withExport(cs *straitv1.ClusterSet, name string, on bool) {
	cs.Spec.Exports = slices.DeleteFunc(cs.Spec.Exports, func(e straitv1.ExportSpec) bool { return e.Name == name })
	if on {
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: lab.SampleNamespace, Name: name,
			Clusters: []string{"c2"}})
	}
}

// BenchmarkClusterSetChangeToDNS: from the push of a commit that exports a service
// (the push asks Flux to sync at once, as a forge's webhook would) until the other
// cluster's pods resolve the new export through CoreDNS: Flux's fetch and apply, the
// hub, the member's strait dns. Waiting for Flux to report the commit applied (its
// health check of the ClusterSet) comes after the clock stops.
func BenchmarkClusterSetChangeToDNS(b *testing.B) {
	env.Require(b)
	env.RestoreClusterSetSpec(b)
	const svc = "whereami-bench"
	exportNew(b, svc)
	name := svc + ".sample.svc.clusterset.local"
	var total time.Duration
	for range b.N {
		data := labtest.ChangeClusterSet(b, env.RepoClusterSet(b), func(cs *straitv1.ClusterSet) { withExport(cs, svc, true) })
		start := time.Now()
		commit := env.PushClusterSet(b, data, "bench: export "+svc)
		resolved(b, "c1", name)
		total += time.Since(start)
		if err := env.WaitSynced(b, commit); err != nil {
			b.Fatal(err)
		}
		setExport(b, svc, false)
		gone(b, "c1", name)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/change-to-dns")
}

// TestRemovedClusterIsPruned: c2 taken out of the ClusterSet leaves nothing of it in c1
// (Peer, ServiceImports and the derived Service, DNS names, routes); put back, traffic flows again.
func TestRemovedClusterIsPruned(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	spec := env.ClusterSet(t).Spec
	c1 := env.Client(t, "c1")
	ctx := context.Background()
	start := time.Now()
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.Clusters = slices.DeleteFunc(cs.Spec.Clusters, func(c straitv1.ClusterSpec) bool { return c.Name == "c2" })
		cs.Spec.Exports = nil // both were c2's
	}); err != nil {
		t.Fatal(err)
	}
	require.Eventually(t, labtest.Converge, "c1: Peer c2 and the imports pruned", func() error {
		peers := &straitv1.PeerList{}
		imports := &mcsv1.ServiceImportList{}
		if err := c1.List(ctx, peers, client.InNamespace(straitv1.SystemNamespace)); err != nil {
			return err
		}
		if err := c1.List(ctx, imports, client.InNamespace(lab.SampleNamespace)); err != nil {
			return err
		}
		if len(peers.Items) > 0 || len(imports.Items) > 0 {
			return fmt.Errorf("%d Peers, %d ServiceImports left", len(peers.Items), len(imports.Items))
		}
		derived := plan.DerivedServiceName(lab.WhereamiCS)
		switch err := c1.Get(ctx, client.ObjectKey{Namespace: lab.SampleNamespace, Name: derived}, &corev1.Service{}); {
		case err == nil:
			return fmt.Errorf("the derived Service %s is still there", derived)
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("reading the derived Service %s: %w", derived, err)
		}
		return nil
	})
	gone(t, "c1", "whereami-cs.sample.svc.clusterset.local")
	require.Eventually(t, labtest.Converge, "c1 nodes: no route to c2's CIDRs", func() error {
		c, _ := env.Topo.Cluster("c1")
		for _, n := range c.Nodes {
			out, err := exec.Command("ip", "-n", n.Namespace, "route", "show", "table", strconv.Itoa(route.Table)).CombinedOutput()
			if err != nil && !strings.Contains(string(out), "does not exist") {
				return fmt.Errorf("%s: %w: %s", n.Name, err, out)
			}
			if strings.Contains(string(out), "10.9.") || strings.Contains(string(out), "10.99.") {
				return fmt.Errorf("%s still routes to c2:\n%s", n.Name, out)
			}
		}
		return nil
	})
	t.Logf("c2 removed → pruned in c1: %s", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) { cs.Spec = spec }); err != nil {
		t.Fatal(err)
	}
	answeredBy(t, "c1", "whereami-cs.sample.svc.clusterset.local:80", "c2")
	ns, _ := env.ClientNamespace(t, "c1")
	remote := env.SamplePods(t, "c2", lab.WhereamiSS)[0]
	require.Eventually(t, labtest.Converge, "c1 → c2's pod", func() error {
		_, err := labtest.TryWhereami(ns, net.JoinHostPort(remote.Status.PodIP, "8080"))
		return err
	})
	t.Logf("c2 back → c1 reaches it: %s", time.Since(start).Round(time.Millisecond))
}

// TestBadCommitIsRefusedAndRevertHeals: a commit whose clusters overlap is refused by the
// webhook when Flux applies it: the Kustomization is Ready=False with the webhook's
// message (the field and the value named), the ClusterSet and the members keep what they
// had, and reverting the commit makes the Kustomization Ready again.
func TestBadCommitIsRefusedAndRevertHeals(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	before := env.ClusterSet(t)
	good := env.RepoClusterSet(t)
	// c1's Peer c2 as it settles after the tests before: pointing at c2's active gateway.
	peer := &straitv1.Peer{}
	require.Eventually(t, labtest.Converge, "c1's Peer c2 points at c2's active gateway", func() error {
		if err := env.Client(t, "c1").Get(context.Background(), client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: "c2"}, peer); err != nil {
			return err
		}
		if active := env.ActiveGateway(t, "c2").Name; peer.Spec.Endpoint == nil || peer.Spec.Endpoint.Gateway != active {
			return fmt.Errorf("endpoint %+v, active gateway %s", peer.Spec.Endpoint, active)
		}
		return nil
	})
	overlap := func(cs *straitv1.ClusterSet) {
		cs.Spec.Clusters[1].PodCIDRs = slices.Clone(cs.Spec.Clusters[0].PodCIDRs)
	}
	// Before the commit, both previews show the webhook's refusal and exit above 1.
	bad := filepath.Join(t.TempDir(), "clusterset.yaml")
	if err := os.WriteFile(bad, labtest.ChangeClusterSet(t, good, overlap), 0o644); err != nil {
		t.Fatal(err)
	}
	for what, diff := range map[string]func(testing.TB, string) (string, string, int){"strait diff": straitDiff, "kubectl diff": kubectlDiff} {
		out, errOut, code := diff(t, bad)
		if code < 2 || !strings.Contains(errOut, "spec.clusters[1].podCIDRs[0]") {
			t.Errorf("%s of overlapping CIDRs: exit %d, want >1 with the webhook's field error:\n%s%s", what, code, out, errOut)
		}
	}
	start := time.Now()
	err := env.UpdateClusterSet(t, overlap)
	var refused *lab.SyncError
	if !errors.As(err, &refused) {
		t.Fatalf("a commit with overlapping pod CIDRs: %v, want Flux to report it refused", err)
	}
	t.Logf("bad commit → Kustomization Ready=%s in %s: %s", refused.Status.Ready, time.Since(start).Round(time.Millisecond), refused.Status.Message)
	for _, want := range []string{"spec.clusters[1].podCIDRs[0]", before.Spec.Clusters[0].PodCIDRs[0], "overlap", "denied the request"} {
		if !strings.Contains(refused.Status.Message, want) {
			t.Errorf("the Kustomization's message %q does not name %q", refused.Status.Message, want)
		}
	}
	if after := env.ClusterSet(t); after.Generation != before.Generation {
		t.Errorf("ClusterSet generation %d → %d after a refused commit", before.Generation, after.Generation)
	}
	again := &straitv1.Peer{}
	if err := env.Client(t, "c1").Get(context.Background(), client.ObjectKeyFromObject(peer), again); err != nil ||
		again.Generation != peer.Generation || !slices.Equal(again.Spec.CIDRs, peer.Spec.CIDRs) {
		t.Errorf("c1's Peer c2 changed: generation %d → %d, spec %+v → %+v (%v)", peer.Generation, again.Generation, specOf(peer), specOf(again), err)
	}
	answeredBy(t, "c1", "whereami-cs.sample.svc.clusterset.local:80", "c2")

	start = time.Now()
	revert, err := env.CommitClusterSet(t, good, "revert the overlapping pod CIDRs")
	if err != nil {
		t.Fatalf("reverting the bad commit: %v", err)
	}
	t.Logf("revert %.12s → Kustomization Ready in %s", revert, time.Since(start).Round(time.Millisecond))
	if after := env.ClusterSet(t); after.Generation != before.Generation {
		t.Errorf("ClusterSet generation %d → %d after the revert", before.Generation, after.Generation)
	}
}

// specOf prints a Peer's spec with its endpoint.
func specOf(p *straitv1.Peer) string {
	if p.Spec.Endpoint == nil {
		return fmt.Sprintf("%v, no endpoint", p.Spec.CIDRs)
	}
	return fmt.Sprintf("%v, endpoint %+v", p.Spec.CIDRs, *p.Spec.Endpoint)
}
