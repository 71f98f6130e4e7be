package plan

import (
	"fmt"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/connections"
)

// status.exports is capped so that the ClusterSet fits in etcd; the summary still counts
// every export, and the exports that need attention come first.
func TestTenThousandExportsAreCountedNotCapped(t *testing.T) {
	const exports = 10000
	cs := twoClusters()
	for i := range exports {
		cs.Spec.Exports = append(cs.Spec.Exports, straitv1.ExportSpec{Namespace: "app", Name: fmt.Sprintf("svc-%05d", i), Clusters: []string{"c1"}})
	}
	obs := Observed{"c1": {Services: []corev1.Service{svc("app", "svc-00000", "10.88.1.1", corev1.ServicePort{Port: 80})}}}
	p := mustCompute(t, cs, obs)
	if p.Status.Summary.Exports != exports {
		t.Errorf("summary.exports = %d, want %d", p.Status.Summary.Exports, exports)
	}
	if len(p.Status.Exports) != MaxStatusExports {
		t.Errorf("status.exports holds %d exports, want the cap %d", len(p.Status.Exports), MaxStatusExports)
	}
	// svc-00000, first by name, is the only healthy export: the cap leaves it out.
	for _, e := range p.Status.Exports {
		if e.Name == "svc-00000" {
			t.Errorf("the healthy export %s is listed before exports without a service", e.Name)
		}
	}
}

// A member's connections in status: every Peer with a state in a small clusterset, those
// not Connected first; in a large one its share of MaxStatusConnections, still those not
// Connected first, and the count over all of them.
func TestStatusConnectionsPutTheDownFirstAndFitTheShare(t *testing.T) {
	peers := func(states ...string) []straitv1.Peer {
		var out []straitv1.Peer
		for i, s := range states {
			p := straitv1.Peer{Spec: straitv1.PeerSpec{ClusterID: fmt.Sprintf("c%03d", i)}}
			p.Status.State, p.Status.LatencyMicros = s, int64(100*i)
			out = append(out, p)
		}
		return out
	}
	names := func(cs []straitv1.ConnectionStatus) (out []string) {
		for _, c := range cs {
			out = append(out, c.Cluster+"="+c.State)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		states   []string
		clusters int
		want     []string
		count    string
	}{
		{"three members, all up", []string{"Connected", "Connected"}, 3, []string{"c000=Connected", "c001=Connected"}, "2/2"},
		{"three members, one down", []string{"Connected", "Connecting"}, 3, []string{"c001=Connecting", "c000=Connected"}, "1/2"},
		{"a peer without a state yet", []string{"", "Connected"}, 3, []string{"c001=Connected"}, "1/1"},
		{"no state at all", []string{"", ""}, 3, nil, ""},
		{"255 members: three each, the down first", append(append([]string{"Connected", "Connected"}, "Error", "Connected"), "Connecting"), 255,
			[]string{"c002=Error", "c004=Connecting", "c000=Connected"}, "3/5"},
		{"1,000 members: one each", []string{"Connected", "Error"}, 1000, []string{"c001=Error"}, "1/2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := connectionsPerCluster(tc.clusters)
			got, count := (&MemberFacts{Peers: peers(tc.states...)}).connections(limit)
			if fmt.Sprint(names(got)) != fmt.Sprint(tc.want) || count != tc.count {
				t.Errorf("from the Peers: connections = %v, %q; want %v, %q", names(got), count, tc.want, tc.count)
			}
			// The same from the summary the member reports instead of its Peers.
			summary := connections.Summarize(connections.OfPeers(peers(tc.states...)))
			reported := &MemberFacts{Membership: &straitv1.Membership{Status: straitv1.MembershipStatus{Connections: &summary}}}
			got, count = reported.connections(limit)
			if fmt.Sprint(names(got)) != fmt.Sprint(tc.want) || count != tc.count {
				t.Errorf("from the report: connections = %v, %q; want %v, %q", names(got), count, tc.want, tc.count)
			}
		})
	}
	if n := connectionsPerCluster(32); n < 31 {
		t.Errorf("32 members: %d connections listed each, want every one of the 31", n)
	}
}

// Past MaxStatusClusters members, status.clusters lists those that are not Ready
// first, then the rest by name, sorted by name; up to it, every one as it was.
func TestStatusClustersListsThoseNeedingAttention(t *testing.T) {
	var clusters []straitv1.ClusterStatus
	notReady := map[string]bool{}
	for i := range 1000 {
		c := straitv1.ClusterStatus{Name: fmt.Sprintf("c%04d", i)}
		ready := metav1.ConditionTrue
		if i%97 == 5 { // spread over the whole list, the last past the cap by name
			ready = metav1.ConditionFalse
			notReady[c.Name] = true
		}
		c.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: ready}}
		clusters = append(clusters, c)
	}
	got := StatusClusters(clusters)
	if len(got) != MaxStatusClusters {
		t.Fatalf("%d clusters listed, want %d", len(got), MaxStatusClusters)
	}
	listed := map[string]bool{}
	for i, c := range got {
		listed[c.Name] = true
		if i > 0 && got[i-1].Name >= c.Name {
			t.Fatalf("not sorted by name: %s before %s", got[i-1].Name, c.Name)
		}
	}
	for n := range notReady {
		if !listed[n] {
			t.Errorf("%s is not Ready and not listed", n)
		}
	}
	// The rest are the Ready ones first by name.
	if want := MaxStatusClusters - len(notReady); len(got)-len(notReady) != want || !listed["c0000"] || listed["c0999"] {
		t.Errorf("the Ready clusters listed are not the first %d by name", want)
	}
	if few := clusters[:MaxStatusClusters]; len(StatusClusters(few)) != MaxStatusClusters {
		t.Errorf("%d clusters: not all listed", MaxStatusClusters)
	}
}
