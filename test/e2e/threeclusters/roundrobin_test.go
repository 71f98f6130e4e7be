package threeclusters

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

const name = "whereami-cs.sample.svc.clusterset.local"

// clusterIP is whereami-cs's ClusterIP in a cluster.
func clusterIP(t *testing.T, cluster string) string {
	t.Helper()
	svc, err := env.HostClient(t, cluster).CoreV1().Services(lab.SampleNamespace).Get(context.Background(), lab.WhereamiCS, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc.Spec.ClusterIP
}

// TestRoundRobinFromAThirdCluster: from c3, which exports nothing, the clusterset name
// answers c1's and c2's ClusterIPs in turn, and GETs reach both clusters.
func TestRoundRobinFromAThirdCluster(t *testing.T) {
	env.Require(t)
	ns, _ := env.ClientNamespace(t, "c3")
	want := []string{clusterIP(t, "c1"), clusterIP(t, "c2")}
	slices.Sort(want)
	seen := map[string]bool{}
	require.Eventually(t, 2*time.Minute, "c3: "+name+" answers both exporting clusters", func() error {
		ips, err := labtest.LookupInPod(context.Background(), ns, name)
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
	answered := map[string]bool{}
	require.Eventually(t, 2*time.Minute, "c3: GETs answered by c1 and c2", func() error {
		a, err := labtest.TryWhereami(ns, name+":80")
		if err != nil {
			return err
		}
		answered[a.Cluster] = true
		if !answered["c1"] || !answered["c2"] {
			return fmt.Errorf("answered by %v so far", answered)
		}
		return nil
	})
	if answered["c3"] {
		t.Errorf("c3 answered, but it does not export whereami-cs")
	}
}

// TestLocalExportWinsInAnExportingCluster: in c1, which exports too, the name is c1's own.
func TestLocalExportWinsInAnExportingCluster(t *testing.T) {
	env.Require(t)
	ns, _ := env.ClientNamespace(t, "c1")
	own := clusterIP(t, "c1")
	for i := range 10 {
		var ips []string
		require.Eventually(t, time.Minute, "c1: "+name, func() error {
			var err error
			ips, err = labtest.LookupInPod(context.Background(), ns, name)
			return err
		})
		if !slices.Equal(ips, []string{own}) {
			t.Fatalf("lookup %d from c1: %v, want c1's own %s", i, ips, own)
		}
	}
}
