package labtest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/test/require"
)

// Converge is how long the e2e suites wait for a change to reach the data path: a
// ClusterSet commit through Flux, the hub and every agent, or a cable switch.
const Converge = 90 * time.Second

// ClientImage and WhereamiImage name the sample apps PodOn runs (lab.SampleContainer).
const (
	ClientImage   = "strait.io/lab/client"
	WhereamiImage = "strait.io/lab/whereami"
)

// Source is a pod traffic starts from.
type Source struct {
	Name, Node, NS, IP string
	Gateway            bool
}

// NodeOfKind is the first gateway-capable or the first plain node of a cluster.
func (e *Env) NodeOfKind(t testing.TB, cluster string, gateway bool) string {
	t.Helper()
	c, ok := e.Topo.Cluster(cluster)
	if ok {
		for _, n := range c.Nodes {
			if n.Gateway == gateway {
				return n.Name
			}
		}
	}
	t.Fatalf("%s: no node with gateway=%v", cluster, gateway)
	return ""
}

// SourcePods are two client pods of the cluster: one on a plain node (its traffic
// reaches the active gateway through vx-strait) and one on a gateway-capable node.
func (e *Env) SourcePods(t testing.TB, cluster string) []Source {
	t.Helper()
	var out []Source
	for _, gateway := range []bool{false, true} {
		node := e.NodeOfKind(t, cluster, gateway)
		p := e.PodOn(t, cluster, node, ClientImage)
		out = append(out, Source{Name: p.Name, Node: node, NS: e.PodNetNS(t, cluster, p), IP: p.Status.PodIP, Gateway: gateway})
	}
	return out
}

// CheckAcross is what a user of one cluster checks of another (remote) from src: the
// remote pod and the remote whereami-cs ClusterIP answer and see the caller's own pod
// IP, and the clusterset.local names of both sample services (headless included)
// resolve and answer from the remote cluster.
func (e *Env) CheckAcross(t *testing.T, src Source, remote string, remotePod corev1.Pod) {
	t.Helper()
	where := fmt.Sprintf("from %s on %s (gateway node: %v)", src.Name, src.Node, src.Gateway)
	a, err := TryWhereami(src.NS, net.JoinHostPort(remotePod.Status.PodIP, "8080"))
	if err != nil || a.Pod != remotePod.Name || a.Caller != src.IP {
		t.Errorf("%s → %s's pod %s: %+v, %v; want %s answering, seeing the caller's pod IP %s", where, remote, remotePod.Status.PodIP, a, err, remotePod.Name, src.IP)
	}
	svc, err := e.HostClient(t, remote).CoreV1().Services(lab.SampleNamespace).Get(context.Background(), lab.WhereamiCS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// kube-proxy on the remote gateway translates the ClusterIP; the caller stays the pod.
	// A connection that gets no answer is tried again for ten seconds (once, after every
	// kube-proxy of the shapes lab was killed and restarted, one timed out on its
	// saturated machine); an answer seeing another caller fails at once.
	var ca workload.Answer
	var cerr error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if ca, cerr = TryWhereami(src.NS, net.JoinHostPort(svc.Spec.ClusterIP, "80")); cerr == nil || time.Now().After(deadline) {
			break
		}
	}
	if cerr != nil || ca.Cluster != remote || ca.Caller != src.IP {
		t.Errorf("%s → %s's ClusterIP %s: %+v, %v; want %s answering, seeing the caller's pod IP %s", where, remote, svc.Spec.ClusterIP, ca, cerr, remote, src.IP)
	}
	pod0 := "whereami-0." + remote + ".whereami-ss.sample.svc.clusterset.local"
	for _, n := range []struct{ name, port string }{
		{remote + ".whereami-cs.sample.svc.clusterset.local", "80"},
		{pod0, "8080"},
	} {
		// DNS follows the cable's health: right after a switch a name may wait for the
		// Peer to be connected again, as a user's retry would.
		var ips []string
		var a workload.Answer
		require.Eventually(t, Converge, where+": "+n.name, func() error {
			var err error
			if ips, err = LookupInPod(context.Background(), src.NS, n.name); err != nil {
				return err
			}
			if a, err = TryWhereami(src.NS, net.JoinHostPort(n.name, n.port)); err == nil && a.Cluster != remote {
				err = fmt.Errorf("%v answered by %s, want %s", ips, a.Cluster, remote)
			}
			return err
		})
		if n.name == pod0 && (a.Pod != "whereami-0" || !slices.Contains(ips, a.PodIP)) {
			t.Errorf("%s → %s = %v answered by %s (%s)", where, n.name, ips, a.Pod, a.PodIP)
		}
	}
}
