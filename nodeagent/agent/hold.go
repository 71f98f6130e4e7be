package agent

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/gateway"
)

// APIServerProbePath is where every agent answers whether the API server answers it,
// on its metrics port: the active gateway asks the other gateway-capable nodes before it
// holds the gateway through an API server that does not answer it (gateway.WithConfirm).
const APIServerProbePath = "/gateway/apiserver"

// apiServerProbe is the answer at APIServerProbePath.
type apiServerProbe struct {
	Node string `json:"node"`
	// Answers: the API server answered this node's read of the gateway Lease just now.
	Answers bool   `json:"answers"`
	Error   string `json:"error,omitempty"`
}

// serveAPIServerProbe reads the gateway Lease with the elector's client, within the
// caller's patience, and says whether the API server answered (whatever it said).
func (a *Agent) serveAPIServerProbe(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	err := gateway.Probe(ctx, a.kube, a.cfg.Namespace)
	p := apiServerProbe{Node: a.cfg.NodeName, Answers: err == nil}
	if err != nil {
		p.Error = err.Error()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(p)
}

// noOtherGatewayReachesTheAPIServer is the active gateway's confirm: it asks every other
// gateway-capable node (from the cache: the API server may be down) whether the API
// server answers it. It says yes only when each was asked and none is answered, so
// that no standby can take the Lease over while this node holds it; no other
// gateway-capable node is a yes too.
func (a *Agent) noOtherGatewayReachesTheAPIServer(ctx context.Context) bool {
	m := &straitv1.Membership{}
	if err := a.client.Get(ctx, types.NamespacedName{Namespace: a.cfg.Namespace, Name: straitv1.MembershipName}, m); err != nil {
		return false
	}
	nodes := &corev1.NodeList{}
	if err := a.client.List(ctx, nodes); err != nil {
		return false
	}
	var peers []string
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Name == a.cfg.NodeName || !GatewayCapable(m, n) {
			continue
		}
		ip := InternalIP(n)
		if !ip.IsValid() {
			return false // cannot be asked
		}
		peers = append(peers, "http://"+net.JoinHostPort(ip.String(), strconv.Itoa(a.cfg.PeerPort))+APIServerProbePath)
	}
	answers := make(chan bool, len(peers))
	var wg sync.WaitGroup
	for _, url := range peers {
		wg.Go(func() { answers <- askPeer(ctx, url) })
	}
	wg.Wait()
	close(answers)
	for silent := range answers {
		if !silent {
			return false
		}
	}
	return true
}

// askPeer is true when the peer at url answered that the API server does not answer it.
func askPeer(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var p apiServerProbe
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&p) != nil {
		return false
	}
	return !p.Answers
}

// peerPort is the port of addr (":9342"), 0 when it has none or is "0".
func peerPort(addr string) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return 0
	}
	return n
}
