package prints

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

// connectionOf is cluster's entry in a Membership's status.connections.
func connectionOf(st straitv1.MembershipStatus, cluster string) (straitv1.ConnectionStatus, bool) {
	if st.Connections == nil {
		return straitv1.ConnectionStatus{}, false
	}
	for _, c := range st.Connections.Peers {
		if c.Cluster == cluster {
			return c, true
		}
	}
	return straitv1.ConnectionStatus{}, false
}

// TestTheMembershipCarriesThePeersConnections runs two reporters against a real API
// server whose member has Peers, the hub's and someone else's, as their active gateway
// writes their status: status.connections summarises those with a state and
// status.prints counts the hub's; a change of state shows within a couple of seconds,
// a change of latency alone not before LatencyEvery and surely after it, with nothing
// else changing to wake the reporter; a status write leaves the Peer print as it was, a
// new label changes it.
func TestTheMembershipCarriesThePeersConnections(t *testing.T) {
	const every = 1500 * time.Millisecond
	cl := clusters.NewCluster(t)
	c := cl.Client
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: straitv1.SystemNamespace}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace,
		Name: straitv1.MembershipName, Labels: hubLabels(own)},
		Spec: straitv1.MembershipSpec{ClusterSet: "ns1/cs1", ClusterID: "c1", PodCIDRs: []string{"10.1.0.0/16"},
			ServiceCIDRs: []string{"10.101.0.0/16"}, Cable: straitv1.MemberCable{Driver: straitv1.CableWireGuard, Port: 4500}}}); err != nil {
		t.Fatal(err)
	}
	// As the gateway's agent does: a write of the status subresource alone.
	setStatus := func(name, state string, latency int64) {
		t.Helper()
		var p straitv1.Peer
		if err := c.Get(ctx, client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		p.Status.State, p.Status.LatencyMicros, p.Status.RxBytes = state, latency, p.Status.RxBytes+1
		if err := c.Status().Update(ctx, &p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []struct {
		cluster, clusterSet, state string
		latency                    int64
	}{
		{"c2", own, straitv1.PeerConnected, 100},
		{"c3", own, straitv1.PeerConnecting, 0},
		{"c4", "", straitv1.PeerConnected, 900}, // someone else's
		{"c5", own, "", 0},                      // its gateway wrote no status yet
	} {
		obj := peer(p.cluster, p.clusterSet, "", 0)
		obj.ResourceVersion, obj.Generation = "", 0
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		if p.state != "" {
			setStatus(p.cluster, p.state, p.latency)
		}
	}

	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { stop(); wg.Wait() })
	for i := range 2 {
		wg.Go(func() {
			err := Run(runCtx, cl.Config, Options{Debounce: 20 * time.Millisecond, LatencyEvery: every,
				Log: testr.New(t).WithValues("replica", i)})
			if err != nil {
				t.Errorf("replica %d: %v", i, err)
			}
		})
	}

	st := reported(t, c, "the first report")
	if p, _ := entry(st.Prints, own, "Peer"); p.Count != 3 {
		t.Errorf("the member's ClusterSet's Peer print %+v, want the hub's 3", p)
	}
	if cs := st.Connections; cs.Total != 3 || cs.Connected != 2 || len(cs.Peers) != 3 || cs.Peers[0].Cluster != "c3" {
		t.Errorf("status.connections %+v, want c3 (not connected) first, then c2 and c4: 2 of 3 connected", cs)
	}
	printBefore, _ := entry(st.Prints, own, "Peer")

	// A change of state, in the Peer's status alone.
	setStatus("c2", straitv1.PeerError, 0)
	require.Eventually(t, 2*time.Second, "c2's Error in status.connections", func() (err error) {
		if st, err = asTheAPIServer(c); err != nil {
			return err
		}
		if e, _ := connectionOf(st, "c2"); e.State != straitv1.PeerError {
			return fmt.Errorf("c2: %+v", e)
		}
		return nil
	})
	if p, _ := entry(st.Prints, own, "Peer"); p != printBefore {
		t.Errorf("a status write changed the Peer print: %+v, then %+v", printBefore, p)
	}

	// A change of latency alone: held back, then written with nothing else to wake the
	// reporter.
	setStatus("c4", straitv1.PeerConnected, 1200)
	changed := time.Now()
	for time.Since(changed) < 500*time.Millisecond {
		m, err := membership(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if e, _ := connectionOf(m.Status, "c4"); e.LatencyMicros != 900 {
			t.Fatalf("c4's latency alone written %v after it changed, before the %v interval: %+v", time.Since(changed), every, e)
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Eventually(t, every+time.Second, "c4's new latency, once the interval is up", func() (err error) {
		if st, err = asTheAPIServer(c); err != nil {
			return err
		}
		if e, _ := connectionOf(st, "c4"); e.LatencyMicros != 1200 {
			return fmt.Errorf("c4: %+v", e)
		}
		return nil
	})

	// A new label: the hub's write (or someone's) changes the Peer print.
	var p straitv1.Peer
	if err := c.Get(ctx, client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: "c3"}, &p); err != nil {
		t.Fatal(err)
	}
	p.Labels["team"] = "net"
	if err := c.Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
	st = reported(t, c, "after a new label on c3")
	if after, _ := entry(st.Prints, own, "Peer"); after.Count != printBefore.Count || after.Sum == printBefore.Sum {
		t.Errorf("Peer print before %+v, after a new label %+v: want the same count, another sum", printBefore, after)
	}
}
