package globalnet

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/plan"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// derivedSlicesHold waits until g1's derived slices of name hold exactly clusters.
func derivedSlicesHold(t *testing.T, name string, clusters ...string) time.Duration {
	t.Helper()
	return require.Eventually(t, converge, fmt.Sprintf("g1: the derived slices of %s hold %v", name, clusters), func() error {
		got, err := env.DerivedSliceClusters(t, "g1", name)
		if err == nil && !slices.Equal(got, clusters) {
			err = fmt.Errorf("they hold %v", got)
		}
		return err
	})
}

// checkCallers fails t unless g2's answers saw g1's egress IPs and g1's the client itself.
func checkCallers(t *testing.T, s labtest.Spread, clientIP netip.Addr) {
	t.Helper()
	g1 := globalCIDR(t, "g1")
	for c := range s.Callers {
		if a := netip.MustParseAddr(c); a != clientIP && !g1.Contains(a) {
			t.Errorf("a caller seen as %s: want g1's client %s (from g1's pods) or one of g1's egress IPs in %s (from g2's)", a, clientIP, g1)
		}
	}
}

// TestClusterSetIPSpreadsOverGlobalIPs: whereami-cs exported from g1 and g2, whose pod
// CIDRs are the same: g1's derived slices hold g1's pod IPs and g2's one global IP, and
// connections from g1's client to the clusterset IP reach both clusters, g2's pods
// seeing a g1 egress IP. g2 leaving the export takes its global IP out of g1's slices
// within seconds of the push, and then g1 alone answers.
func TestClusterSetIPSpreadsOverGlobalIPs(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	if err := env.UpdateClusterSet(t, labtest.ExportWhereamiFrom("g1", "g2")); err != nil {
		t.Fatal(err)
	}
	ns, clientIP := env.ClientNamespace(t, "g1")
	ip := env.ClusterSetIP(t, "g1", lab.WhereamiCS)
	derivedSlicesHold(t, lab.WhereamiCS, "g1", "g2")
	// Two endpoints are g1's pods, one is g2's global IP: g2 gets about a third.
	var s labtest.Spread
	require.Eventually(t, converge, "g1 → the clusterset IP reaches g2", func() error {
		s = labtest.Connect(300, func() (workload.Answer, error) { return labtest.TryWhereami(ns, net.JoinHostPort(ip, "80")) })
		if s.Clusters["g2"] == 0 {
			return fmt.Errorf("%s", s)
		}
		return nil
	})
	t.Logf("g1 → %s:80, 300 connections: %s", ip, s)
	s.CheckBalanced(t, 0.15, "g1", "g2")
	checkCallers(t, s, clientIP)

	data := labtest.ChangeClusterSet(t, env.RepoClusterSet(t), labtest.ExportWhereamiFrom("g1"))
	commit := env.PushClusterSet(t, data, "e2e: g2 stops exporting whereami-cs")
	took := derivedSlicesHold(t, lab.WhereamiCS, "g1")
	t.Logf("push → g2's global IP out of g1's derived slices: %s", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("g2 left g1's derived slices %s after the push, want within 10 s", took.Round(time.Millisecond))
	}
	require.Eventually(t, 10*time.Second, "g1 → the clusterset IP: g1 alone", func() error {
		s = labtest.Connect(50, func() (workload.Answer, error) { return labtest.TryWhereami(ns, net.JoinHostPort(ip, "80")) })
		if len(s.Failed) > 0 || s.Clusters["g1"] != 50 {
			return fmt.Errorf("%s", s)
		}
		return nil
	})
	if err := env.WaitSynced(t, commit); err != nil {
		t.Fatal(err)
	}
}

// TestSessionAffinityHoldsThroughAGlobalIP: whereami-cs, exported from g2 alone, with
// ClientIP affinity in g2: from g1 every connection to the clusterset IP goes to g2's
// one global IP (g1's kube-proxy has that one endpoint), and g2's gateway keeps it on
// one pod, as g2's kube-proxy would for a local client.
func TestSessionAffinityHoldsThroughAGlobalIP(t *testing.T) {
	env.Require(t)
	services := env.HostClient(t, "g2").CoreV1().Services(lab.SampleNamespace)
	patch := func(p string) {
		t.Helper()
		if _, err := services.Patch(context.Background(), lab.WhereamiCS, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch(`{"spec":{"sessionAffinity":"ClientIP"}}`)
	t.Cleanup(func() { patch(`{"spec":{"sessionAffinity":"None","sessionAffinityConfig":null}}`) })
	ns, _ := env.ClientNamespace(t, "g1")
	ip := env.ClusterSetIP(t, "g1", lab.WhereamiCS)
	require.Eventually(t, converge, "g1's derived Service takes g2's ClientIP affinity", func() error {
		svc, err := env.HostClient(t, "g1").CoreV1().Services(lab.SampleNamespace).Get(context.Background(),
			plan.DerivedServiceName(lab.WhereamiCS), metav1.GetOptions{})
		if err == nil && svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
			err = fmt.Errorf("is %s", svc.Spec.SessionAffinity)
		}
		return err
	})
	// g2's gateway follows the Service within a pass of its agent.
	var s labtest.Spread
	took := require.Eventually(t, converge, "g1 → the clusterset IP: one g2 pod for 30 connections", func() error {
		s = labtest.Connect(30, func() (workload.Answer, error) { return labtest.TryWhereami(ns, net.JoinHostPort(ip, "80")) })
		if len(s.Failed) > 0 || len(s.Pods) != 1 || s.Clusters["g2"] != 30 {
			return fmt.Errorf("%s", s)
		}
		return nil
	})
	t.Logf("g1 → %s:80 with ClientIP affinity in g2, 30 connections: %s (after %s)", ip, s, took.Round(time.Millisecond))
}

// TestUDPThroughAGlobalIP: a UDP service exported from g2 answers datagrams sent from
// g1 to its clusterset IP, through g2's global IP, seeing a g1 egress IP.
func TestUDPThroughAGlobalIP(t *testing.T) {
	env.Require(t)
	const svc = "whereami-udp"
	services := env.HostClient(t, "g2").CoreV1().Services(lab.SampleNamespace)
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: lab.SampleNamespace},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": lab.WhereamiCS}, Ports: []corev1.ServicePort{
			{Name: "whereami", Protocol: corev1.ProtocolUDP, Port: 5353, TargetPort: intstr.FromInt32(workload.WhereamiPort)}}}}
	if _, err := services.Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = services.Delete(context.Background(), svc, metav1.DeleteOptions{}) })
	env.RestoreClusterSetSpec(t)
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: lab.SampleNamespace, Name: svc, Clusters: []string{"g2"}})
	}); err != nil {
		t.Fatal(err)
	}
	ns, clientIP := env.ClientNamespace(t, "g1")
	hostPort := net.JoinHostPort(env.ClusterSetIP(t, "g1", svc), "5353")
	derivedSlicesHold(t, svc, "g2")
	require.Eventually(t, converge, "g1 → "+hostPort+"/udp answers", func() error {
		_, err := labtest.TryWhereamiUDP(ns, hostPort)
		return err
	})
	spread := labtest.Connect(50, func() (workload.Answer, error) { return labtest.TryWhereamiUDP(ns, hostPort) })
	t.Logf("g1 → %s/udp, 50 datagrams: %s", hostPort, spread)
	spread.CheckBalanced(t, 1, "g2")
	checkCallers(t, spread, clientIP)
}
