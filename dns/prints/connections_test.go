package prints

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/connections"
	"github.com/straitnet/strait/internal/memberprint"
)

// peer is a Peer of the member as the API server holds it: clusterSet "" for one
// without the hub's labels, state "" for one whose gateway wrote no status yet.
func peer(cluster, clusterSet, state string, latency int64) *straitv1.Peer {
	p := &straitv1.Peer{
		ObjectMeta: metav1.ObjectMeta{Namespace: straitv1.SystemNamespace, Name: cluster, ResourceVersion: "7", Generation: 2,
			Annotations: map[string]string{straitv1.AnnotationDigest: "d-" + cluster}},
		Spec:   straitv1.PeerSpec{ClusterID: cluster, CIDRs: []string{"10.2.0.0/16"}},
		Status: straitv1.PeerStatus{State: state, LatencyMicros: latency, RxBytes: 1000},
	}
	if clusterSet != "" {
		p.Labels = hubLabels(clusterSet)
	}
	return p
}

// listed is p as the dynamic client hands it to the reflector.
func listed(t *testing.T, p *straitv1.Peer) *unstructured.Unstructured {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: u}
}

// TestAPeersPrintIsTheOneTheHubComputes: the hub fingerprints the typed Peer its apply
// returns; the keeper, fed the dynamic client's object, sums the same fingerprint.
func TestAPeersPrintIsTheOneTheHubComputes(t *testing.T) {
	typed := peer("c2", own, straitv1.PeerConnected, 300)
	for name, obj := range map[string]any{"unstructured": listed(t, typed), "typed": typed} {
		k := NewKeeper()
		k.Saw("Peer", obj)
		got, _ := entry(printsOf(t, k, own), own, "Peer")
		if got.Count != 1 || got.Sum != memberprint.FormatSum(memberprint.Of("Peer", typed)) {
			t.Errorf("%s: Peer print %+v, want 1 of sum %s", name, got, memberprint.FormatSum(memberprint.Of("Peer", typed)))
		}
	}
}

// TestAStatusWriteLeavesThePeersPrint: the active gateway rewrites every Peer's status
// at each health round; that changes the connections, not the print. A label does.
func TestAStatusWriteLeavesThePeersPrint(t *testing.T) {
	k := NewKeeper()
	p := peer("c2", own, straitv1.PeerConnected, 300)
	k.Saw("Peer", listed(t, p))
	before, _ := entry(printsOf(t, k, own), own, "Peer")

	p.ResourceVersion, p.Status.State, p.Status.LatencyMicros = "8", straitv1.PeerError, 0
	k.Saw("Peer", listed(t, p))
	if after, _ := entry(printsOf(t, k, own), own, "Peer"); after != before {
		t.Errorf("a status write changed the Peer print: %+v, then %+v", before, after)
	}
	if c := k.Connections(); c.Connected != 0 || len(c.Peers) != 1 || c.Peers[0].State != straitv1.PeerError {
		t.Errorf("connections %+v after Connected → Error", c)
	}

	p.ResourceVersion, p.Labels["team"] = "9", "net"
	k.Saw("Peer", listed(t, p))
	if after, _ := entry(printsOf(t, k, own), own, "Peer"); after.Count != 1 || after.Sum == before.Sum {
		t.Errorf("a new label left the Peer print as it was: %+v, then %+v", before, after)
	}
}

// TestTheConnectionsAreEveryPeersWithAState: status.connections is the summary of every
// Peer that has a state, the hub's or not, through adds, a delete the watch missed and a
// relist; the print counts the hub's alone.
func TestTheConnectionsAreEveryPeersWithAState(t *testing.T) {
	peers := []*straitv1.Peer{
		peer("c2", own, straitv1.PeerConnected, 300),
		peer("c3", own, straitv1.PeerConnecting, 0),
		peer("c4", "", straitv1.PeerConnected, 900), // someone else's
		peer("c5", own, "", 0),                      // no status yet
		peer("c6", "ns2.other", straitv1.PeerError, 0),
	}
	summary := func(ps ...*straitv1.Peer) straitv1.MemberConnections {
		var list []straitv1.Peer
		for _, p := range ps {
			list = append(list, *p)
		}
		return connections.Summarize(connections.OfPeers(list))
	}
	k := NewKeeper()
	if got := k.Connections(); got.Total != 0 || got.Connected != 0 || got.Peers != nil {
		t.Errorf("no Peers: %+v, want total and connected 0", got)
	}
	for _, p := range peers {
		k.Saw("Peer", listed(t, p))
	}
	if got, want := k.Connections(), summary(peers...); !reflect.DeepEqual(got, want) || got.Total != 4 || got.Connected != 2 {
		t.Errorf("connections %+v, want %+v (4, 2 connected)", got, want)
	}
	if p, _ := entry(printsOf(t, k, own), own, "Peer"); p.Count != 3 {
		t.Errorf("the member's ClusterSet's Peer print counts %d, want the hub's 3", p.Count)
	}

	k.Gone("Peer", toolscache.DeletedFinalStateUnknown{Key: straitv1.SystemNamespace + "/c4"})
	if got, want := k.Connections(), summary(peers[0], peers[1], peers[3], peers[4]); !reflect.DeepEqual(got, want) {
		t.Errorf("after c4 went: %+v, want %+v", got, want)
	}

	k.Replace("Peer", []any{listed(t, peers[1]), listed(t, peers[2])})
	if got, want := k.Connections(), summary(peers[1], peers[2]); !reflect.DeepEqual(got, want) {
		t.Errorf("after a relist: %+v, want %+v", got, want)
	}
}
