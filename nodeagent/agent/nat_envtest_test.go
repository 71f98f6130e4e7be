package agent

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/test/require"
)

// TestStatusBehindNATOnAPIServer runs member c1's gateway agents on a real API server
// with c1 behind a NAT, as the ClusterSet says it (the Membership's gateway endpoint):
// the active Gateway publishes its advertised address apart from its own, the Peer
// shows the endpoint the cable uses, the NAT and who initiates, and when both clusters
// of the pair are behind masquerade the Peer's Connected condition says so and what to
// do.
func TestStatusBehindNATOnAPIServer(t *testing.T) {
	cfg, _ := startAPIServer(t)
	ctx := context.Background()
	c := seedMember(t, cfg)
	// The ClusterSet decides; seedMember's per-node annotations would override it.
	for _, name := range []string{"gw1", "gw2"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		patch(t, c, n, func() { n.Annotations = nil })
	}
	public := map[string]string{"gw1": "203.0.113.71", "gw2": "203.0.113.72"}
	setEndpoint := func(ep *straitv1.GatewayEndpoint) {
		m := &straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Name: straitv1.MembershipName, Namespace: straitv1.SystemNamespace}}
		patch(t, c, m, func() { m.Spec.GatewayEndpoint = ep })
	}
	setEndpoint(&straitv1.GatewayEndpoint{Type: straitv1.EndpointAddress, NodeAddresses: []straitv1.NodeAddress{
		{Node: "gw1", Address: public["gw1"]}, {Node: "gw2", Address: public["gw2"]}}})

	// c2's gateway as c1's cable saw it in the handshake: its NAT's address and port.
	seen := netip.MustParseAddrPort("198.51.100.9:40123")
	agents := map[string]*runningAgent{}
	for i, name := range []string{"gw1", "gw2"} {
		agents[name] = startAgent(t, cfg, name, fmt.Sprintf("10.0.1.%d", i+1))
		agents[name].driver.setNAT(seen)
	}
	var active string
	require.Eventually(t, 10*time.Second, "a gateway is elected", func() error {
		if active = leaseHolder(t, c); active == "" {
			return fmt.Errorf("no holder")
		}
		return nil
	})
	own := map[string]string{"gw1": "10.0.1.1", "gw2": "10.0.1.2"}[active]

	gatewayAddrs := func(wantIP string) func() error {
		return func() error {
			g := &straitv1.Gateway{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: active}, g); err != nil {
				return err
			}
			if g.Spec.HAState != straitv1.HAActive || g.Spec.IP != wantIP || g.Spec.LocalIP != own {
				return fmt.Errorf("gateway %s: %s, ip %q, localIP %q; want active, ip %q, localIP %q",
					active, g.Spec.HAState, g.Spec.IP, g.Spec.LocalIP, wantIP, own)
			}
			return nil
		}
	}
	peerStatus := func(check func(straitv1.PeerStatus) error) func() error {
		return func() error {
			p := &straitv1.Peer{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "c2"}, p); err != nil {
				return err
			}
			if p.Status.Gateway != active {
				return fmt.Errorf("peer status written by %q, want the active gateway %s", p.Status.Gateway, active)
			}
			return check(p.Status)
		}
	}
	connectedThrough := func(initiator string) func(straitv1.PeerStatus) error {
		return func(st straitv1.PeerStatus) error {
			if st.State != "Connected" || st.Endpoint != seen.String() || !st.NATDetected || st.Initiator != initiator {
				return fmt.Errorf("peer status: state %s, endpoint %q, natDetected %v, initiator %q; want Connected, %s, true, %s",
					st.State, st.Endpoint, st.NATDetected, st.Initiator, seen, initiator)
			}
			return nil
		}
	}

	t.Run("behind 1:1 NAT", func(t *testing.T) {
		require.Eventually(t, 10*time.Second, "the active Gateway advertises its public address and keeps its own",
			gatewayAddrs(public[active]))
		// Both ends can be dialed: the routed test cable sends from both.
		require.Eventually(t, 10*time.Second, "the Peer shows the endpoint, the NAT and the initiator",
			peerStatus(connectedThrough("Both")))
	})

	t.Run("behind masquerade", func(t *testing.T) {
		setEndpoint(&straitv1.GatewayEndpoint{Type: straitv1.EndpointMasquerade})
		require.Eventually(t, 10*time.Second, "the active Gateway advertises nothing and keeps its own address",
			gatewayAddrs(""))
		require.Eventually(t, 10*time.Second, "the Peer says this side initiates",
			peerStatus(connectedThrough("Local")))
	})

	t.Run("both behind masquerade", func(t *testing.T) {
		p := &straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "c2", Namespace: straitv1.SystemNamespace}}
		patch(t, c, p, func() { p.Spec.Endpoint.IP, p.Spec.Endpoint.BehindMasquerade = "", true })
		bothMasqueraded := func(alive bool) func(straitv1.PeerStatus) error {
			return func(st straitv1.PeerStatus) error {
				cond := apimeta.FindStatusCondition(st.Conditions, straitv1.ConditionConnected)
				if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != straitv1.ReasonBothBehindMasquerade {
					return fmt.Errorf("condition %+v, want Connected False %s", cond, straitv1.ReasonBothBehindMasquerade)
				}
				for _, want := range []string{"c2", "both behind masquerade", "spec.clusters[].gateway.endpoint"} {
					if !strings.Contains(cond.Message, want) {
						return fmt.Errorf("condition message %q does not say %q", cond.Message, want)
					}
				}
				if said := strings.Contains(cond.Message, "a session opened before still carries traffic"); said != alive {
					return fmt.Errorf("condition message %q: says the old session lives on %v, want %v", cond.Message, said, alive)
				}
				if st.State == "Connected" || st.Initiator != "None" {
					return fmt.Errorf("state %s, initiator %q; want not Connected, None", st.State, st.Initiator)
				}
				return nil
			}
		}
		// The ClusterSet changed under a live cable (a lab whose clusters can in fact
		// be dialed): it still carries traffic, but the Peer says the pair cannot work.
		require.Eventually(t, 10*time.Second, "the Peer's condition says both are behind masquerade, the old session alive",
			peerStatus(bothMasqueraded(true)))
		agents[active].driver.setDown(true)
		require.Eventually(t, 10*time.Second, "the Peer's condition says both are behind masquerade", peerStatus(bothMasqueraded(false)))
	})
}

// patch reads obj, changes it with change and writes the change as a merge patch, as
// the hub or a user editing one field would.
func patch(t testing.TB, c client.Client, obj client.Object, change func()) {
	t.Helper()
	ctx := context.Background()
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	orig := obj.DeepCopyObject().(client.Object)
	change()
	if err := c.Patch(ctx, obj, client.MergeFrom(orig)); err != nil {
		t.Fatalf("patch %T %s: %v", obj, obj.GetName(), err)
	}
}
