package prints

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/connections"
)

// peerKind is the kind whose objects also make status.connections.
const peerKind = "Peer"

// sawPeer records a Peer's connection, whatever its labels (the ClusterSet's status
// lists every Peer's): the one connections.OfPeers makes of it, or none when it has no
// state; k.mu is held.
func (k *Keeper) sawPeer(key uint64, obj any) {
	delete(k.peers, key)
	p, ok := asPeer(obj)
	if !ok {
		return
	}
	if c := connections.OfPeers([]straitv1.Peer{*p}); len(c) == 1 {
		k.peers[key] = c[0]
	}
}

// Connections is status.connections: the summary of the connections of the Peers
// that have a state; a Total of 0 when none has.
func (k *Keeper) Connections() straitv1.MemberConnections {
	k.mu.Lock()
	conns := make([]straitv1.ConnectionStatus, 0, len(k.peers))
	for _, c := range k.peers {
		conns = append(conns, c)
	}
	k.mu.Unlock()
	return connections.Summarize(conns)
}

// asPeer is what connections.OfPeers reads of a Peer, from the typed object or from
// the dynamic client's: its cluster ID, state and latency. Reading the three fields of
// the unstructured object spares converting the whole of it at every health round of
// the active gateway (every Peer's status, every 5 s).
func asPeer(obj any) (*straitv1.Peer, bool) {
	switch o := obj.(type) {
	case *straitv1.Peer:
		return o, true
	case *unstructured.Unstructured:
		p := &straitv1.Peer{}
		p.Spec.ClusterID, _, _ = unstructured.NestedString(o.Object, "spec", "clusterID")
		p.Status.State, _, _ = unstructured.NestedString(o.Object, "status", "state")
		p.Status.LatencyMicros, _, _ = unstructured.NestedInt64(o.Object, "status", "latencyMicros")
		return p, true
	}
	return nil, false
}
