package connections

import (
	"cmp"
	"fmt"
	"slices"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// OfPeers are the connections of peers that have a state, in no particular order.
func OfPeers(peers []straitv1.Peer) []straitv1.ConnectionStatus {
	out := make([]straitv1.ConnectionStatus, 0, len(peers))
	for i := range peers {
		p := &peers[i]
		if p.Status.State == "" {
			continue
		}
		out = append(out, straitv1.ConnectionStatus{Cluster: p.Spec.ClusterID, State: p.Status.State, LatencyMicros: p.Status.LatencyMicros})
	}
	return out
}

// Summarize is the summary of conns (connections with a state, in any order): their
// count, the count of the Connected, and the first straitv1.MaxReportedConnections of
// them in the order of Order. conns is sorted in place.
func Summarize(conns []straitv1.ConnectionStatus) straitv1.MemberConnections {
	Order(conns)
	s := straitv1.MemberConnections{Total: int32(len(conns))}
	for _, c := range conns {
		if c.State == straitv1.PeerConnected {
			s.Connected++
		}
	}
	if len(conns) > 0 {
		s.Peers = slices.Clone(conns[:min(len(conns), straitv1.MaxReportedConnections)])
	}
	return s
}

// Order sorts connections as the status lists them: those not Connected first, each
// group by cluster name.
func Order(conns []straitv1.ConnectionStatus) {
	slices.SortFunc(conns, func(a, b straitv1.ConnectionStatus) int {
		aUp, bUp := a.State == straitv1.PeerConnected, b.State == straitv1.PeerConnected
		if aUp != bUp {
			if aUp {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Cluster, b.Cluster)
	})
}

// List is a cluster's entry in the ClusterSet's status: at most limit of the summary's
// connections, and "connected/total"; nothing when none has a state.
func List(s *straitv1.MemberConnections, limit int) ([]straitv1.ConnectionStatus, string) {
	if s == nil || s.Total == 0 {
		return nil, ""
	}
	out := slices.Clone(s.Peers[:min(len(s.Peers), max(limit, 0))])
	return out, fmt.Sprintf("%d/%d", s.Connected, s.Total)
}

// Same says whether a and b are the same summary, latencies included.
func Same(a, b *straitv1.MemberConnections) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Total == b.Total && a.Connected == b.Connected && slices.Equal(a.Peers, b.Peers)
}

// SameStates says whether a and b list the same connections in the same states, with
// the same counts, whatever their latencies: a change of latency alone, which every
// active gateway writes at each health round, is written and read less often than a
// change of state.
func SameStates(a, b *straitv1.MemberConnections) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	if a == nil {
		return true
	}
	return a.Total == b.Total && a.Connected == b.Connected &&
		slices.EqualFunc(a.Peers, b.Peers, func(x, y straitv1.ConnectionStatus) bool { return x.Cluster == y.Cluster && x.State == y.State })
}
