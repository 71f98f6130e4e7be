package nat

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/cabletest"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// IdleGapBound bounds the time without an answer once traffic starts again after an
// idle period past the router's UDP timeout (issue 26): a mapping that lapsed costs a
// dead-peer detection (10 s) or a new handshake, far more.
const IdleGapBound = 2 * time.Second

// Config is the lab of a NAT package: c2's gateways behind its router's NAT of the kind
// nat; behind masquerade, c1's behind a 1:1 NAT, so that c2 has an address to dial and
// both can be declared behind masquerade. A hub, two gateways and a plain node a
// cluster, the sample workloads.
func Config(nat string, portBase int) labtest.Config {
	shapes := map[string]topology.ClusterShape{"c2": {GatewayNAT: nat}}
	file := "test/e2e/nat/testdata/onetoone.yaml"
	if nat == topology.GatewayNATMasquerade {
		shapes["c1"] = topology.ClusterShape{GatewayNAT: topology.GatewayNATOneToOne}
		file = "test/e2e/nat/testdata/masquerade.yaml"
	}
	return labtest.Config{
		ClusterSet: file,
		Spec: topology.Spec{ClusterSet: "nat", Hub: true, Gateways: 2, Workers: 1, SampleWorkloads: true,
			Clusters: shapes},
		PortBase: portBase,
	}
}

// Suite runs, for wireguard then ipsec, the seed checks both ways, the Peers' status, a
// crash failover on c2 and an idle period past the router's UDP timeout. Under a 1:1
// NAT vxlan must work too, and c2 reached at per-node addresses, a LoadBalancer's and a
// DNS name's; behind masquerade the webhook must refuse vxlan, and with both
// clusters declared behind masquerade the Peers must say why no cable comes up.
func Suite(t *testing.T, env *labtest.Env, nat string) {
	env.Require(t)
	for _, d := range []straitv1.CableDriver{straitv1.CableWireGuard, straitv1.CableIPsec} {
		t.Run(string(d), func(t *testing.T) { throughTheNAT(t, env, nat, d, true) })
	}
	if nat == topology.GatewayNATOneToOne {
		t.Run("vxlan", func(t *testing.T) { throughTheNAT(t, env, nat, straitv1.CableVXLAN, false) })
		t.Run("reached as the ClusterSet says", func(t *testing.T) { reachedAsTheFileSays(t, env) })
		return
	}
	t.Run("vxlan is refused behind masquerade", func(t *testing.T) { vxlanRefused(t, env) })
	t.Run("both behind masquerade: the Peers say so", func(t *testing.T) { bothBehindMasquerade(t, env) })
}

// throughTheNAT switches the cable to driver and checks it through the NAT; faults adds
// the crash failover on c2 and the idle period.
func throughTheNAT(t *testing.T, env *labtest.Env, nat string, driver straitv1.CableDriver, faults bool) {
	start := time.Now()
	if err := env.SwitchCable(t, driver); err != nil {
		t.Fatal(err)
	}
	env.CrossTraffic(t, "c1", "c2")
	t.Logf("figure: c2 behind %s, %s: ClusterSet updated → c1 → c2 answered in %s", nat, driver, time.Since(start).Round(time.Millisecond))
	t.Run("pods, ClusterIPs and clusterset names answer both ways, the caller kept", func(t *testing.T) {
		for _, pair := range [][2]string{{"c1", "c2"}, {"c2", "c1"}} {
			remote := env.SamplePods(t, pair[1], lab.WhereamiSS)[0]
			for _, src := range env.SourcePods(t, pair[0]) {
				env.CheckAcross(t, src, pair[1], remote)
			}
		}
	})
	t.Run("the Peers show the endpoint in use, the NAT and the initiator", func(t *testing.T) {
		for _, pair := range [][2]string{{"c1", "c2"}, {"c2", "c1"}} {
			requirePeer(t, env, pair[0], pair[1], driver)
		}
	})
	if !faults {
		return
	}
	t.Run("a crash of c2's active gateway fails over within the bound", func(t *testing.T) {
		src, target := env.CrossTraffic(t, "c1", "c2")
		h := env.FailOver(t, "c2", syscall.SIGKILL, src, target)
		t.Logf("figure: failover, c2 behind %s, %s: %s crashed, %s took over: c1 → c2 from a plain node without an answer for %s from the crash (bound %s)",
			nat, driver, h.From, h.To, h.Outage.Longest.Round(time.Millisecond), labtest.CrashFailoverBound)
		// The new active gateway is the one advertised (behind a 1:1 NAT its own public
		// address) and the one c1's cable reaches.
		requirePeer(t, env, "c1", "c2", driver)
		requirePeer(t, env, "c2", "c1", driver)
	})
	t.Run("an idle period past the router's UDP timeout leaves no gap", func(t *testing.T) {
		src, target := env.CrossTraffic(t, "c1", "c2")
		idle := (topology.RouterUDPTimeout + 5) * time.Second
		t.Logf("no traffic of c1's and c2's pods for %s (c2's router forgets a UDP flow after %d s)", idle, topology.RouterUDPTimeout)
		// The cable's keepalives must keep c2's router's mapping: its conntrack entry of
		// the cable the same one before and after.
		c2, _ := env.Topo.Cluster("c2")
		gw, port := env.ActiveGateway(t, "c2"), cablePort(t, env)
		before, mapped, err := cabletest.RouterFlow(c2.Router.Namespace, gw.LANAddr.Addr(), port)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(idle)
		after, mappedAfter, err := cabletest.RouterFlow(c2.Router.Namespace, gw.LANAddr.Addr(), port)
		if err != nil || after != before || mappedAfter != mapped {
			t.Errorf("c2's router's mapping of %s's cable lapsed while idle: before started at %d to port %d, after: %d to port %d (%v)",
				gw.Name, before, mapped, after, mappedAfter, err)
		}
		// From c1: behind masquerade only a mapping c2 kept alive lets its packets in.
		resumed := time.Now()
		p := labtest.StartProber(src.NS, target)
		time.Sleep(3 * time.Second)
		o := p.Since(resumed)
		t.Logf("figure: after %s idle, c2 behind %s, %s: c1 → c2 %s", idle, nat, driver, o)
		labtest.BoundOutage(t, fmt.Sprintf("c1 → c2 %s after %s idle", target, idle), o, IdleGapBound)
	})
}

// cablePort is the UDP port the cable runs on (every gateway of the set listens there).
func cablePort(t *testing.T, env *labtest.Env) int {
	t.Helper()
	p, err := peer(t, env, "c1", "c2")
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.Endpoint == nil {
		t.Fatal("c1's Peer c2 has no endpoint")
	}
	return int(p.Spec.Endpoint.Port)
}

// requirePeer waits until the active gateway of local reports remote's Peer as the NAT
// makes it: the remote's active gateway reached at its advertised address (a remote
// behind masquerade has none: at its router's address, on the port the router chose),
// the NAT detected when the local gateway does not own what it advertises or the remote
// is behind masquerade (a 1:1 NAT in front of the remote is transparent to this side),
// and the side that opens the cable.
func requirePeer(t *testing.T, env *labtest.Env, local, remote string, driver straitv1.CableDriver) {
	t.Helper()
	lc, _ := env.Topo.Cluster(local)
	rc, _ := env.Topo.Cluster(remote)
	remoteMasq := rc.Shape.GatewayNAT == topology.GatewayNATMasquerade
	localMasq := lc.Shape.GatewayNAT == topology.GatewayNATMasquerade
	wantInitiator := "Both"
	switch {
	case remoteMasq:
		wantInitiator = "Remote"
	case localMasq:
		wantInitiator = "Local"
	case driver == straitv1.CableIPsec && local < remote:
		wantInitiator = "Local"
	case driver == straitv1.CableIPsec:
		wantInitiator = "Remote"
	}
	wantNAT := lc.Shape.GatewayNAT != "" || remoteMasq
	var last straitv1.Peer
	require.Eventually(t, labtest.Converge, local+"'s Peer "+remote, func() error {
		gw := env.ActiveGateway(t, remote)
		var err error
		if last, err = peer(t, env, local, remote); err != nil {
			return err
		}
		ep, st := last.Spec.Endpoint, last.Status
		if ep == nil || ep.Gateway != gw.Name || ep.Driver != driver {
			return fmt.Errorf("spec.endpoint %+v, want %s's active gateway %s on %s", ep, remote, gw.Name, driver)
		}
		wantIP, wantInUse := advertised(gw), ""
		if remoteMasq {
			wantIP = ""
			// Behind masquerade: the router's address, on whatever port it mapped.
			wantInUse = rc.Router.WANAddr.Addr().String() + ":"
		} else {
			wantInUse = net.JoinHostPort(wantIP, strconv.Itoa(int(ep.Port)))
		}
		if ep.IP != wantIP || ep.BehindMasquerade != remoteMasq {
			return fmt.Errorf("spec.endpoint ip %q behindMasquerade %v, want %q %v", ep.IP, ep.BehindMasquerade, wantIP, remoteMasq)
		}
		if !strings.HasPrefix(st.Endpoint, wantInUse) || (!remoteMasq && st.Endpoint != wantInUse) {
			return fmt.Errorf("status.endpoint %q, want %s", st.Endpoint, wantInUse)
		}
		if st.NATDetected != wantNAT || st.Initiator != wantInitiator {
			return fmt.Errorf("status natDetected %v initiator %q, want %v %q", st.NATDetected, st.Initiator, wantNAT, wantInitiator)
		}
		if c := meta.FindStatusCondition(st.Conditions, straitv1.ConditionConnected); c == nil || c.Status != "True" {
			return fmt.Errorf("condition Connected %+v", c)
		}
		return nil
	})
	t.Logf("%s's Peer %s: spec.endpoint %s %q, status endpoint %s, natDetected %v, initiator %s", local, remote,
		last.Spec.Endpoint.Gateway, last.Spec.Endpoint.IP, last.Status.Endpoint, last.Status.NATDetected, last.Status.Initiator)
}

// advertised is the address a gateway node is reached at when it is not behind
// masquerade: its public address behind a 1:1 NAT, else its own on the WAN.
func advertised(n topology.Node) string {
	if n.ExternalIP.IsValid() {
		return n.ExternalIP.String()
	}
	return n.WANAddr.Addr().String()
}

// vxlanRefused: a commit that switches to vxlan while c2 is behind masquerade is refused
// by the hub's webhook with the field and why (Flux reports it), and the cable runs on.
func vxlanRefused(t *testing.T, env *labtest.Env) {
	env.RestoreClusterSetSpec(t)
	before := env.ClusterSet(t)
	err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) { labtest.SetDriver(cs, straitv1.CableVXLAN) })
	var refused *lab.SyncError
	if !errors.As(err, &refused) {
		t.Fatalf("a commit of vxlan with c2 behind masquerade: %v, want Flux to report it refused", err)
	}
	t.Logf("refused: %s", refused.Status.Message)
	for _, want := range []string{"spec.clusters[1].gateway.endpoint.type", "vxlan", "masquerade"} {
		if !strings.Contains(refused.Status.Message, want) {
			t.Errorf("the refusal %q does not name %q", refused.Status.Message, want)
		}
	}
	if after := env.ClusterSet(t); after.Generation != before.Generation || after.Spec.Cable.Driver != before.Spec.Cable.Driver {
		t.Errorf("the ClusterSet changed after a refused commit: generation %d → %d, driver %s → %s",
			before.Generation, after.Generation, before.Spec.Cable.Driver, after.Spec.Cable.Driver)
	}
	env.CrossTraffic(t, "c1", "c2")
}

// bothBehindMasquerade declares c1 behind masquerade too: neither side can dial, and
// each Peer says so (initiator None, Connected False with reason BothBehindMasquerade
// and what to change) instead of retrying in silence. The revert puts c1 back.
func bothBehindMasquerade(t *testing.T, env *labtest.Env) {
	env.RestoreClusterSetSpec(t)
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.Clusters[0].Gateway.Endpoint = &straitv1.GatewayEndpoint{Type: straitv1.EndpointMasquerade}
	}); err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{"c1", "c2"}, {"c2", "c1"}} {
		local, remote := pair[0], pair[1]
		var c *metav1.Condition
		require.Eventually(t, labtest.Converge, local+"'s Peer "+remote+": both behind masquerade", func() error {
			p, err := peer(t, env, local, remote)
			if err != nil {
				return err
			}
			c = meta.FindStatusCondition(p.Status.Conditions, straitv1.ConditionConnected)
			if p.Status.Initiator != "None" || c == nil || c.Status != "False" || c.Reason != straitv1.ReasonBothBehindMasquerade {
				return fmt.Errorf("initiator %q, Connected %+v", p.Status.Initiator, c)
			}
			return nil
		})
		for _, want := range []string{"both behind masquerade", "spec.clusters[].gateway.endpoint"} {
			if !strings.Contains(c.Message, want) {
				t.Errorf("%s's Peer %s: Connected's message %q does not say %q", local, remote, c.Message, want)
			}
		}
		t.Logf("%s's Peer %s: Connected=False %s: %s", local, remote, c.Reason, c.Message)
	}
}
