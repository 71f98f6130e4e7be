package globalnet

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// globalIPs are the global IPs the hub gave g2's exports and their pods (GlobalIngress
// objects in g2), by service and pod.
func globalIPs(t *testing.T) map[string]string {
	t.Helper()
	list := &straitv1.GlobalIngressList{}
	if err := env.Client(t, "g2").List(context.Background(), list, client.InNamespace(straitv1.SystemNamespace)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, gi := range list.Items {
		if gi.Spec.GlobalIP != "" {
			out[gi.Spec.ServiceName] = gi.Spec.GlobalIP
		}
		for _, ep := range gi.Spec.Endpoints {
			out[gi.Spec.ServiceName+"/"+ep.PodName] = ep.GlobalIP
		}
	}
	return out
}

// sortedLookup is lookupIn's answer in address order (CoreDNS's loadbalance shuffles it).
func sortedLookup(t *testing.T, ns, name string) string {
	t.Helper()
	ips := lookupIn(t, ns, name, globalCIDR(t, "g2"))
	slices.SortFunc(ips, netip.Addr.Compare)
	return fmt.Sprint(ips)
}

// TestHubRebuiltFromScratchRenumbersNothing: the hub is lost with its etcd and built
// again from the same git repo (Argo CD syncs the ClusterSet into the new hub); no global
// CIDR, global IP or clusterset IP moves, and g1 keeps reaching g2 by the same names and
// addresses.
func TestHubRebuiltFromScratchRenumbersNothing(t *testing.T) {
	env.Require(t)
	ns, _ := env.ClientNamespace(t, "g1")
	cidrs := map[string]string{}
	for _, c := range []string{"g1", "g2"} {
		cidrs[c] = globalCIDR(t, c).String()
	}
	ipsBefore := globalIPs(t)
	if len(ipsBefore) < 3 {
		t.Fatalf("g2 has global IPs %v, want whereami-cs's and whereami-ss's pods'", ipsBefore)
	}
	names := []string{"g2.whereami-cs.sample.svc.clusterset.local", "whereami-ss.sample.svc.clusterset.local"}
	dnsBefore := map[string]string{}
	for _, n := range names {
		dnsBefore[n] = sortedLookup(t, ns, n)
	}
	csIP := env.ClusterSetIP(t, "g1", lab.WhereamiCS)
	old := env.ClusterSet(t)

	took := env.RebuildHub(t)
	t.Logf("hub rebuilt from scratch (fresh etcd, strait and Argo CD installed again, the ClusterSet synced from git): lab up took %s",
		took.Round(time.Millisecond))
	rebuilt := env.ClusterSet(t)
	if rebuilt.UID == old.UID {
		t.Fatalf("the hub's ClusterSet kept its UID %s: the hub was not rebuilt", old.UID)
	}
	for c, want := range cidrs {
		var got string
		for _, st := range rebuilt.Status.Clusters {
			if st.Name == c {
				got = st.GlobalCIDR
			}
		}
		if got != want {
			t.Errorf("%s's global CIDR %s → %s after the rebuild", c, want, got)
		}
	}
	require.Eventually(t, converge, "g2's global IPs as before", func() error {
		if after := globalIPs(t); !maps.Equal(after, ipsBefore) {
			return fmt.Errorf("before %v, after %v", ipsBefore, after)
		}
		return nil
	})
	for _, n := range names {
		if after := sortedLookup(t, ns, n); after != dnsBefore[n] {
			t.Errorf("%s: %s before the rebuild, %s after", n, dnsBefore[n], after)
		}
	}
	// The derived Service stays in g1 through the rebuild: the clusterset IP does too.
	if after := env.ClusterSetIP(t, "g1", lab.WhereamiCS); after != csIP {
		t.Errorf("whereami-cs's clusterset IP in g1: %s before the rebuild, %s after", csIP, after)
	}
	require.Eventually(t, converge, "g1 → whereami-cs after the rebuild", func() error {
		a, err := labtest.TryWhereami(ns, net.JoinHostPort("whereami-cs.sample.svc.clusterset.local", "80"))
		if err == nil && a.Cluster != "g2" {
			err = fmt.Errorf("answered by %s", a.Cluster)
		}
		return err
	})
}
