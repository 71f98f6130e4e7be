package connections

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// statusShare is plan.connectionsPerCluster: a cluster's share of the 1,000
// connections the ClusterSet's status lists.
func statusShare(clusters int) int { return max(1, 1000/max(1, clusters)) }

func peersOf(r *rand.Rand, n int) []straitv1.Peer {
	states := []string{"", straitv1.PeerConnected, straitv1.PeerConnected, "Connecting", "Error"}
	peers := make([]straitv1.Peer, n)
	for i := range peers {
		peers[i].Spec.ClusterID = fmt.Sprintf("c%04d", r.IntN(100000))
		peers[i].Status.State = states[r.IntN(len(states))]
		peers[i].Status.LatencyMicros = r.Int64N(5000)
	}
	return peers
}

// TestTheSummaryListsWhatThePeersWould: for every ClusterSet size up to the limit of
// 1,000 clusters, the status entry listed from the member's summary (32 connections at
// most) is the one listed from all its Peers.
func TestTheSummaryListsWhatThePeersWould(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for clusters := 1; clusters <= 1000; clusters += 1 + clusters/8 {
		peers := peersOf(r, clusters-1)
		all := OfPeers(peers)
		Order(all)
		up := 0
		for _, c := range all {
			if c.State == straitv1.PeerConnected {
				up++
			}
		}
		limit := statusShare(clusters)
		var want []straitv1.ConnectionStatus
		wantCount := ""
		if len(all) > 0 {
			want = all[:min(len(all), limit)]
			wantCount = fmt.Sprintf("%d/%d", up, len(all))
		}
		s := Summarize(OfPeers(peers))
		got, count := List(&s, limit)
		if !slices.Equal(got, want) || count != wantCount {
			t.Fatalf("%d clusters: listed %v %q from the summary, want %v %q", clusters, got, count, want, wantCount)
		}
		if len(s.Peers) > straitv1.MaxReportedConnections {
			t.Fatalf("%d clusters: the summary lists %d, more than its %d", clusters, len(s.Peers), straitv1.MaxReportedConnections)
		}
	}
}

func TestTheNotConnectedComeFirst(t *testing.T) {
	conns := []straitv1.ConnectionStatus{
		{Cluster: "a", State: straitv1.PeerConnected}, {Cluster: "d", State: "Error"},
		{Cluster: "b", State: "Connecting"}, {Cluster: "c", State: straitv1.PeerConnected},
	}
	s := Summarize(conns)
	var order []string
	for _, c := range s.Peers {
		order = append(order, c.Cluster)
	}
	if !slices.Equal(order, []string{"b", "d", "a", "c"}) || s.Total != 4 || s.Connected != 2 {
		t.Fatalf("summary %+v: want b, d (not connected, by name) then a, c; 2 of 4 connected", s)
	}
	if got, count := List(&s, 1); len(got) != 1 || got[0].Cluster != "b" || count != "2/4" {
		t.Fatalf("List(1) = %v %q, want [b] 2/4", got, count)
	}
}

func TestNoStateListsNothing(t *testing.T) {
	s := Summarize(OfPeers([]straitv1.Peer{{Spec: straitv1.PeerSpec{ClusterID: "a"}}}))
	if got, count := List(&s, 10); got != nil || count != "" {
		t.Fatalf("peers without a state listed %v %q", got, count)
	}
	if got, count := List(nil, 10); got != nil || count != "" {
		t.Fatalf("no summary listed %v %q", got, count)
	}
}

func TestSameStatesLooksPastLatency(t *testing.T) {
	a := Summarize([]straitv1.ConnectionStatus{{Cluster: "a", State: straitv1.PeerConnected, LatencyMicros: 100}})
	b := Summarize([]straitv1.ConnectionStatus{{Cluster: "a", State: straitv1.PeerConnected, LatencyMicros: 900}})
	c := Summarize([]straitv1.ConnectionStatus{{Cluster: "a", State: "Error", LatencyMicros: 100}})
	switch {
	case !SameStates(&a, &b):
		t.Fatal("a change of latency alone counted as a change of state")
	case SameStates(&a, &c):
		t.Fatal("Connected → Error not seen")
	case SameStates(&a, nil) || !SameStates(nil, nil):
		t.Fatal("a summary and none compared wrong")
	case Same(&a, &b) || !Same(&a, &a) || Same(&a, nil) || !Same(nil, nil):
		t.Fatal("Same did not tell a change of latency, or a summary from none")
	}
}
