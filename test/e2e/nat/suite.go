package nat

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
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

// A pair is two clusters of the lab whose cable the NAT in front of the second one's
// gateways carries: from dials or is dialled, to sits behind nat.
type pair struct{ from, to, nat string }

// The lab's pairs: c2's gateways behind a 1:1 NAT (the cloud case), reached from c1,
// whose gateways have their own WAN addresses; c3's behind a masquerade that forwards
// nothing in, reached from c2, which is behind its 1:1 NAT (so that c3 has an address to
// dial). c1 and c3 are connected too, and not checked here.
var (
	oneToOne   = pair{from: "c1", to: "c2", nat: topology.GatewayNATOneToOne}
	masquerade = pair{from: "c2", to: "c3", nat: topology.GatewayNATMasquerade}
	pairs      = []pair{oneToOne, masquerade}
)

// masqueradeIndex is c3's entry in the ClusterSet's spec.clusters.
const masqueradeIndex = 2

// Config is the lab of the NAT checks: c2's gateways behind its router's 1:1 NAT and
// c3's behind its router's masquerade, c1's on the WAN; a hub, two gateways and a plain
// node a cluster, the sample workloads. One lab for both kinds of NAT: two labs of two
// clusters cost .ci/run about two minutes more.
func Config(portBase int) labtest.Config {
	return labtest.Config{
		ClusterSet: "test/e2e/nat/testdata/nat.yaml",
		Spec: topology.Spec{ClusterSet: "nat", Hub: true, Gateways: 2, Workers: 1, SampleWorkloads: true,
			Clusters: map[string]topology.ClusterShape{
				oneToOne.to:   {GatewayNAT: topology.GatewayNATOneToOne},
				masquerade.to: {GatewayNAT: topology.GatewayNATMasquerade},
			}},
		PortBase: portBase,
	}
}

// Suite runs, for wireguard then ipsec, for each pair the seed checks both ways and the
// Peers' status, a crash failover of the NATed cluster's gateway, and an idle period
// past the routers' UDP timeout (one period for both pairs). Then: a commit of vxlan is
// refused while c3 is behind masquerade, and with c3 out of the ClusterSet vxlan works
// through c2's 1:1 NAT; c2 is reached at per-node addresses, a LoadBalancer's and a DNS
// name's; and with c2 declared behind masquerade too, the Peers of c2 and c3 say why no
// cable comes up.
func Suite(t *testing.T, env *labtest.Env) {
	env.Require(t)
	for _, d := range []straitv1.CableDriver{straitv1.CableWireGuard, straitv1.CableIPsec} {
		t.Run(string(d), func(t *testing.T) { throughTheNATs(t, env, d) })
	}
	t.Run("vxlan is refused behind masquerade", func(t *testing.T) { vxlanRefused(t, env) })
	t.Run("vxlan through the 1:1 NAT", func(t *testing.T) { vxlanThroughOneToOne(t, env) })
	t.Run("reached as the ClusterSet says", func(t *testing.T) { reachedAsTheFileSays(t, env) })
	t.Run("both behind masquerade: the Peers say so", func(t *testing.T) { bothBehindMasquerade(t, env) })
}

// throughTheNATs switches the cable to driver and checks each pair through its NAT, then
// the faults: a crash failover behind each NAT, an idle period.
func throughTheNATs(t *testing.T, env *labtest.Env, driver straitv1.CableDriver) {
	start := time.Now()
	if err := env.SwitchCable(t, driver); err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		env.CrossTraffic(t, p.from, p.to)
	}
	t.Logf("figure: %s: ClusterSet updated → c1 → c2 and c2 → c3 answered in %s", driver, time.Since(start).Round(time.Millisecond))
	for _, p := range pairs {
		t.Run(p.to+" behind "+p.nat, func(t *testing.T) { seedChecks(t, env, p, driver) })
	}
	for _, p := range pairs {
		t.Run("a crash of "+p.to+"'s active gateway behind "+p.nat+" fails over within the bound", func(t *testing.T) {
			src, target := env.CrossTraffic(t, p.from, p.to)
			h := env.FailOver(t, p.to, syscall.SIGKILL, src, target)
			t.Logf("figure: failover, %s behind %s, %s: %s crashed, %s took over: %s → %s from a plain node without an answer for %s from the crash (bound %s)",
				p.to, p.nat, driver, h.From, h.To, p.from, p.to, h.Outage.Longest.Round(time.Millisecond), labtest.CrashFailoverBound)
			// The new active gateway is the one advertised (behind a 1:1 NAT its own
			// public address) and the one the other side's cable reaches.
			requirePeer(t, env, p.from, p.to, driver)
			requirePeer(t, env, p.to, p.from, driver)
		})
	}
	t.Run("an idle period past the routers' UDP timeout leaves no gap", func(t *testing.T) { idle(t, env, driver) })
}

// seedChecks: pods, ClusterIPs and clusterset names answer both ways between the pair,
// the caller kept, and each side's Peer shows the endpoint in use, the NAT and the
// initiator.
func seedChecks(t *testing.T, env *labtest.Env, p pair, driver straitv1.CableDriver) {
	for _, ends := range [][2]string{{p.from, p.to}, {p.to, p.from}} {
		remote := env.SamplePods(t, ends[1], lab.WhereamiSS)[0]
		for _, src := range env.SourcePods(t, ends[0]) {
			env.CheckAcross(t, src, ends[1], remote)
		}
	}
	requirePeer(t, env, p.from, p.to, driver)
	requirePeer(t, env, p.to, p.from, driver)
}

// idle leaves the pods without traffic past the routers' UDP timeout: each cable's
// keepalives must keep its router's mapping (the NATed gateway's conntrack entry of the
// cable the same before and after), and then each pair answers at once: behind
// masquerade only a mapping the NATed side kept alive lets the other's packets in.
func idle(t *testing.T, env *labtest.Env, driver straitv1.CableDriver) {
	type watched struct {
		pair
		src    labtest.Source
		target string
		router string
		gw     topology.Node
		peer   netip.Addr
		start  uint64
		mapped uint16
	}
	port := cablePort(t, env)
	var ws []watched
	for _, p := range pairs {
		w := watched{pair: p}
		w.src, w.target = env.CrossTraffic(t, p.from, p.to)
		c, _ := env.Topo.Cluster(p.to)
		w.router, w.gw = c.Router.Namespace, env.ActiveGateway(t, p.to)
		// The other end of the cable on the WAN: from's active gateway where it is
		// reached (behind its 1:1 NAT, its public address).
		w.peer = netip.MustParseAddr(advertised(env.ActiveGateway(t, p.from)))
		var err error
		if w.start, w.mapped, err = cabletest.RouterFlow(w.router, w.gw.LANAddr.Addr(), port, w.peer); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	period := (topology.RouterUDPTimeout + 5) * time.Second
	t.Logf("no traffic of the pods for %s (the routers forget a UDP flow after %d s)", period, topology.RouterUDPTimeout)
	time.Sleep(period)
	for _, w := range ws {
		after, mappedAfter, err := cabletest.RouterFlow(w.router, w.gw.LANAddr.Addr(), port, w.peer)
		if err != nil || after != w.start || mappedAfter != w.mapped {
			t.Errorf("%s's router's mapping of %s's cable to %s lapsed while idle: before started at %d to port %d, after: %d to port %d (%v)",
				w.to, w.gw.Name, w.peer, w.start, w.mapped, after, mappedAfter, err)
		}
	}
	for _, w := range ws {
		resumed := time.Now()
		pr := labtest.StartProber(w.src.NS, w.target)
		time.Sleep(3 * time.Second)
		o := pr.Since(resumed)
		t.Logf("figure: after %s idle, %s behind %s, %s: %s → %s %s", period, w.to, w.nat, driver, w.from, w.to, o)
		labtest.BoundOutage(t, fmt.Sprintf("%s → %s %s after %s idle", w.from, w.to, w.target, period), o, IdleGapBound)
	}
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

// vxlanRefused: a commit that switches to vxlan while c3 is behind masquerade is refused
// by the hub's webhook with the field and why (Flux reports it), and the cables run on.
func vxlanRefused(t *testing.T, env *labtest.Env) {
	env.RestoreClusterSetSpec(t)
	before := env.ClusterSet(t)
	err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) { labtest.SetDriver(cs, straitv1.CableVXLAN) })
	var refused *lab.SyncError
	if !errors.As(err, &refused) {
		t.Fatalf("a commit of vxlan with %s behind masquerade: %v, want Flux to report it refused", masquerade.to, err)
	}
	t.Logf("refused: %s", refused.Status.Message)
	for _, want := range []string{fmt.Sprintf("spec.clusters[%d].gateway.endpoint.type", masqueradeIndex), "vxlan", "masquerade"} {
		if !strings.Contains(refused.Status.Message, want) {
			t.Errorf("the refusal %q does not name %q", refused.Status.Message, want)
		}
	}
	if after := env.ClusterSet(t); after.Generation != before.Generation || after.Spec.Cable.Driver != before.Spec.Cable.Driver {
		t.Errorf("the ClusterSet changed after a refused commit: generation %d → %d, driver %s → %s",
			before.Generation, after.Generation, before.Spec.Cable.Driver, after.Spec.Cable.Driver)
	}
	for _, p := range pairs {
		env.CrossTraffic(t, p.from, p.to)
	}
}

// vxlanThroughOneToOne: with c3 (behind masquerade) out of the ClusterSet, vxlan is
// accepted and carries c1 ↔ c2 through c2's 1:1 NAT, and the Peers show it; the revert
// puts c3 back and the cable it had.
func vxlanThroughOneToOne(t *testing.T, env *labtest.Env) {
	env.RestoreClusterSetSpec(t)
	start := time.Now()
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.Clusters = slices.DeleteFunc(cs.Spec.Clusters, func(c straitv1.ClusterSpec) bool { return c.Name == masquerade.to })
		for i := range cs.Spec.Exports {
			cs.Spec.Exports[i].Clusters = slices.DeleteFunc(cs.Spec.Exports[i].Clusters, func(c string) bool { return c == masquerade.to })
		}
		labtest.SetDriver(cs, straitv1.CableVXLAN)
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{oneToOne.from, oneToOne.to} {
		env.WaitActiveGateway(t, c, straitv1.CableVXLAN)
	}
	env.CrossTraffic(t, oneToOne.from, oneToOne.to)
	t.Logf("figure: %s out, vxlan: ClusterSet updated → c1 → c2 answered in %s", masquerade.to, time.Since(start).Round(time.Millisecond))
	seedChecks(t, env, oneToOne, straitv1.CableVXLAN)
}

// bothBehindMasquerade declares c2 behind masquerade too: neither c2 nor c3 can dial the
// other, and each Peer says so (initiator None, Connected False with reason
// BothBehindMasquerade and what to change) instead of retrying in silence. The revert
// puts c2 back.
func bothBehindMasquerade(t *testing.T, env *labtest.Env) {
	env.RestoreClusterSetSpec(t)
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) {
		cs.Spec.Clusters[1].Gateway.Endpoint = &straitv1.GatewayEndpoint{Type: straitv1.EndpointMasquerade}
	}); err != nil {
		t.Fatal(err)
	}
	for _, ends := range [][2]string{{masquerade.from, masquerade.to}, {masquerade.to, masquerade.from}} {
		local, remote := ends[0], ends[1]
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
