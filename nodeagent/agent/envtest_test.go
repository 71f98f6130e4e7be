package agent

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/gateway"
	"github.com/straitnet/strait/nodeagent/health"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/clusters"
	"github.com/straitnet/strait/test/require"
)

// startAPIServer starts a real kube-apiserver and etcd (test/clusters) with Strait's CRDs
// and returns its config and an admin kubeconfig.
func startAPIServer(t testing.TB) (*rest.Config, []byte) {
	t.Helper()
	c := clusters.NewCluster(t)
	ctrllog.SetLogger(logr.Discard())
	return c.Config, c.KubeConfig
}

// constProber answers every probe: the wiring test checks that results reach Peer
// status; health's own test sends real ICMP.
type constProber struct{}

func (constProber) Probe(context.Context, netip.Addr, netip.Addr) (health.Result, error) {
	return health.Result{Sent: 5, Received: 4, RTT: 1500 * time.Microsecond}, nil
}

type runningAgent struct {
	name   string
	fake   *kernel.Fake
	cancel context.CancelFunc
	done   chan error
	// kill cuts the agent off the API server, as a crash or a partition would.
	kill   *clusters.Cut
	driver *routedDriver
	// metrics holds this agent's Prometheus metrics.
	metrics *prometheus.Registry
	// stall, armed, holds the agent's next pass in the middle (see stallGate).
	stall *stallGate
	agent *Agent
}

// startAgent runs the agent of node name (address ip) on a fake kernel against the API
// server at cfg; opts change its Config.
func startAgent(t testing.TB, cfg *rest.Config, name, ip string, opts ...func(*Config)) *runningAgent {
	t.Helper()
	ra := &runningAgent{name: name, done: make(chan error, 1), driver: &routedDriver{}, metrics: prometheus.NewRegistry(), stall: newStallGate(),
		// wan: the routed cable's device on gateways.
		fake: kernel.NewFake(kernel.Link{Name: "eth0", Kind: "veth", MTU: 1500, Up: true,
			Addrs: []netip.Prefix{netip.MustParsePrefix(ip + "/24")}}, kernel.Link{Name: "wan", Kind: "veth", MTU: 1500, Up: true})}
	ra.kill = &clusters.Cut{}
	c := ra.kill.Config(cfg)
	agentCfg := Config{NodeName: name, Namespace: straitv1.SystemNamespace, Resync: 10 * time.Second,
		HealthInterval: 200 * time.Millisecond, Election: gateway.FastTiming(), Kernel: stallingKernel{Kernel: ra.fake, gate: ra.stall},
		Cables: func(context.Context, *straitv1.Membership, string) (cable.Driver, error) { return ra.driver, nil },
		Prober: constProber{}, MetricsAddr: "0", HealthAddr: "0", Metrics: ra.metrics}
	for _, o := range opts {
		o(&agentCfg)
	}
	a, err := New(c, agentCfg)
	if err != nil {
		t.Fatal(err)
	}
	ra.agent = a
	ctx, cancel := context.WithCancel(context.Background())
	ra.cancel = cancel
	go func() { ra.done <- a.Run(ctx) }()
	t.Cleanup(func() { ra.stop() })
	return ra
}

func (ra *runningAgent) stop() {
	if ra.cancel != nil {
		ra.cancel()
		<-ra.done
		ra.cancel = nil
	}
}

func mustCreate(t testing.TB, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// TestAgentWithAPIServer runs three agents (two gateway-capable nodes and a plain one)
// on fake kernels against a real API server: election, Gateway objects, the plain
// node's routes following the Lease, Peer status, and failover after a graceful stop
// and after a crash.
func TestAgentWithAPIServer(t *testing.T) {
	cfg, _ := startAPIServer(t)
	graceful, crash := failoverScenario(t, cfg)
	t.Logf("plain node re-pointed %v after a graceful stop, %v after a crash (lease %v, retry %v)",
		graceful, crash, gateway.FastTiming().LeaseDuration, gateway.FastTiming().RetryPeriod)
	if graceful > 500*time.Millisecond {
		t.Errorf("graceful handover took %v, target < 0.5 s", graceful)
	}
	if crash > 2*time.Second {
		t.Errorf("failover after a crash took %v, target < 2 s", crash)
	}
}

// BenchmarkFailover measures how long after the active gateway's agent stops (SIGTERM:
// the Lease is released) or dies (cut off, the Lease expires) the plain node's routes
// point at the new gateway.
func BenchmarkFailover(b *testing.B) {
	var graceful, crash time.Duration
	for range b.N {
		cfg, _ := startAPIServer(b)
		g, c := failoverScenario(b, cfg)
		graceful += g
		crash += c
	}
	b.ReportMetric(float64(graceful.Milliseconds())/float64(b.N), "ms-graceful")
	b.ReportMetric(float64(crash.Milliseconds())/float64(b.N), "ms-crash")
}

// failoverScenario sets up a member with two gateway-capable nodes and a plain one,
// checks election, Gateway objects and Peer status, then stops the active agent
// gracefully and later crashes the next one; it returns both re-pointing times.
// memberPSK is the PSK Secret as the hub copies it into the member; the agent hands the
// cable the key the Membership names.
const memberPSK = "the member's copy of the ClusterSet's PSK"

// seedMember writes what the hub and the nodes write into member c1 before any agent
// runs: two gateway-capable nodes (gw1, gw2) and a plain one with their addresses, the
// PSK Secret, the Membership and a Peer c2. It returns a client of the API server.
func seedMember(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: straitv1.SystemNamespace}})
	for i, name := range []string{"gw1", "gw2", "plain"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if name != "plain" {
			n.Labels["strait.io/gateway"] = "true"
			n.Annotations = map[string]string{AnnotationGatewayIP: fmt.Sprintf("203.0.113.%d", i+1)}
		}
		mustCreate(t, c, n)
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.1.%d", i+1)}}
		if err := c.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(t, c,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "strait-ipsec-psk", Namespace: straitv1.SystemNamespace},
			Data: map[string][]byte{"psk": []byte(memberPSK)}},
		&straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Name: straitv1.MembershipName, Namespace: straitv1.SystemNamespace},
			Spec: straitv1.MembershipSpec{ClusterSet: "strait-system/cs", ClusterID: "c1", PodCIDRs: []string{"10.10.0.0/16"},
				ServiceCIDRs: []string{"10.11.0.0/16"}, Cable: straitv1.MemberCable{Driver: straitv1.CableVXLAN, Port: 4500,
					PSKSecretName: "strait-ipsec-psk"},
				GatewayNodeSelector: map[string]string{"strait.io/gateway": "true"}}},
		&straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "c2", Namespace: straitv1.SystemNamespace},
			Spec: straitv1.PeerSpec{ClusterID: "c2", CIDRs: []string{"10.20.0.0/16"},
				Endpoint: &straitv1.PeerEndpoint{Gateway: "c2-gw1", IP: "198.51.100.9", Port: 4500, Driver: straitv1.CableVXLAN,
					HealthCheckIP: "10.20.0.1"}}})
	return c
}

// leaseHolder is the gateway Lease's holder as the API server has it ("": none).
func leaseHolder(t testing.TB, c client.Client) string {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: gateway.LeaseName}, l); err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// gatewayIs checks that node name's Gateway says want and has a heartbeat.
func gatewayIs(c client.Client, name string, want straitv1.HAState) func() error {
	return func() error {
		g := &straitv1.Gateway{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: name}, g); err != nil {
			return err
		}
		if g.Spec.HAState != want || g.Status.LastHeartbeat == nil {
			return fmt.Errorf("gateway %s: %s, heartbeat %v", name, g.Spec.HAState, g.Status.LastHeartbeat)
		}
		return nil
	}
}

func failoverScenario(t testing.TB, cfg *rest.Config) (graceful, crash time.Duration) {
	ctx := context.Background()
	c := seedMember(t, cfg)
	agents := map[string]*runningAgent{}
	for i, name := range []string{"gw1", "gw2", "plain"} {
		agents[name] = startAgent(t, cfg, name, fmt.Sprintf("10.0.1.%d", i+1))
	}
	holder := func() string { return leaseHolder(t, c) }
	plainPointsAt := func(gw string) func() error {
		ip := map[string]string{"gw1": "10.0.1.1", "gw2": "10.0.1.2"}[gw]
		return func() error {
			d, _ := kernel.Dump(ctx, agents["plain"].fake, route.Ownership())
			if !strings.Contains(d, "fdb "+ip+"\n") || !strings.Contains(d, "10.20.0.0/16 via "+route.VTEP(netip.MustParseAddr(ip)).String()) {
				return fmt.Errorf("plain node does not point at %s:\n%s", gw, d)
			}
			return nil
		}
	}
	gatewayState := func(name string, want straitv1.HAState) func() error { return gatewayIs(c, name, want) }

	var first string
	require.Eventually(t, 10*time.Second, "a gateway is elected", func() error {
		if first = holder(); first == "" {
			return fmt.Errorf("no holder")
		}
		return nil
	})
	second := map[string]string{"gw1": "gw2", "gw2": "gw1"}[first]
	require.Eventually(t, 5*time.Second, "plain node routes to the elected gateway", plainPointsAt(first))
	require.Eventually(t, 5*time.Second, "active Gateway published", gatewayState(first, straitv1.HAActive))
	require.Eventually(t, 5*time.Second, "passive Gateway published", gatewayState(second, straitv1.HAPassive))
	if err := c.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "plain"}, &straitv1.Gateway{}); err == nil {
		t.Error("the plain node published a Gateway")
	}
	require.Eventually(t, 5*time.Second, "the active gateway runs the cable", func() error {
		if rs := agents[first].driver.remotes(); len(rs) != 1 || rs[0].ClusterID != "c2" {
			return fmt.Errorf("cable remotes %v", rs)
		}
		if got := agents[first].driver.psk(); got != memberPSK {
			return fmt.Errorf("cable PSK %q, want the Secret's %q", got, memberPSK)
		}
		return nil
	})
	require.Eventually(t, 5*time.Second, "peer status from the active gateway's health checks", func() error {
		p := &straitv1.Peer{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: "c2"}, p); err != nil {
			return err
		}
		if p.Status.State != "Connected" || p.Status.Gateway != first || p.Status.LatencyMicros != 1500 || p.Status.LossPercent != 20 {
			return fmt.Errorf("peer status %+v", p.Status)
		}
		if hc := p.Status.HealthChecks; len(hc) != 1 || hc[0].Family != corev1.IPv4Protocol || hc[0].Received != 4 || hc[0].LatencyMicros != 1500 {
			return fmt.Errorf("peer health checks %+v, want the IPv4 round only (an IPv4 clusterset)", hc)
		}
		return nil
	})
	require.Eventually(t, 5*time.Second, "the same in the active gateway's metrics, none in the passive one's", func() error {
		got, passive := gathered(t, agents[first].metrics), gathered(t, agents[second].metrics)
		for series, want := range map[string]float64{
			"strait_agent_gateway_active":                                1,
			`strait_agent_peer_connected{peer="c2"}`:                     1,
			`strait_agent_peer_latency_seconds{family="ipv4",peer="c2"}`: 0.0015,
			`strait_agent_peer_loss_ratio{family="ipv4",peer="c2"}`:      0.2,
			// A pass may fail now and then (a write conflict); the last one must not.
			"strait_agent_last_sync_ok": 1,
		} {
			if v, ok := got[series]; !ok || v != want {
				return fmt.Errorf("%s: %s = %v (present: %v), want %v", first, series, v, ok, want)
			}
		}
		if got["strait_agent_sync_duration_seconds_count"] == 0 {
			return fmt.Errorf("%s: no sync observed", first)
		}
		if v, ok := passive["strait_agent_gateway_active"]; !ok || v != 0 {
			return fmt.Errorf("%s: strait_agent_gateway_active %v (present: %v)", second, v, ok)
		}
		if _, ok := passive[`strait_agent_peer_connected{peer="c2"}`]; ok {
			return fmt.Errorf("the passive gateway %s reports peer health", second)
		}
		return nil
	})

	// A cable that has the remote but no working connection (an IKE initiation the remote
	// gateway refused because its agent had not loaded the connection yet) is converged
	// again at every health check, not only at the next resync (10 s here).
	drv := agents[first].driver
	drv.setDown(true)
	before := drv.convergeCount()
	require.Eventually(t, 2*time.Second, "converging again while the cable is down", func() error {
		if n := drv.convergeCount() - before; n < 6 { // health checks every 200 ms
			return fmt.Errorf("%d converges since the cable went down", n)
		}
		return nil
	})
	drv.setDown(false)

	// Graceful stop: the Lease is released and the other gateway takes over at once.
	start := time.Now()
	agents[first].stop()
	require.Eventually(t, 5*time.Second, "graceful handover", func() error {
		if h := holder(); h != second {
			return fmt.Errorf("holder %q", h)
		}
		return plainPointsAt(second)()
	})
	graceful = time.Since(start)
	require.Eventually(t, 5*time.Second, "new active Gateway", gatewayState(second, straitv1.HAActive))

	// Crash: the active agent loses the API server without releasing anything.
	agents[first] = startAgent(t, cfg, first, map[string]string{"gw1": "10.0.1.1", "gw2": "10.0.1.2"}[first])
	require.Eventually(t, 5*time.Second, "restarted agent is passive", gatewayState(first, straitv1.HAPassive))
	// The Gateway says passive already (the stopped process marked it so): wait for the
	// new process's first pass, which starts its elector watching the Lease. A standby
	// counts the holder's term from its own first sight of a renewal.
	require.Eventually(t, 5*time.Second, "restarted agent synced", func() error {
		if v, ok := gathered(t, agents[first].metrics)["strait_agent_gateway_active"]; !ok || v != 0 {
			return fmt.Errorf("strait_agent_gateway_active %v (present: %v)", v, ok)
		}
		return nil
	})
	time.Sleep(gateway.FastTiming().RetryPeriod) // its elector has read the Lease
	start = time.Now()
	agents[second].kill.Set(true)
	require.Eventually(t, 10*time.Second, "failover after a crash", func() error {
		if h := holder(); h != first {
			return fmt.Errorf("holder %q", h)
		}
		return plainPointsAt(first)()
	})
	crash = time.Since(start)
	// The cut-off agent lives on: its elector steps down once it cannot renew, and its
	// converge (from its cache) stops the cable, so its data path stops answering.
	require.Eventually(t, 2*time.Second, "the cut-off gateway stops its cable", func() error {
		if rs := agents[second].driver.remotes(); len(rs) != 0 {
			return fmt.Errorf("cable remotes %v", rs)
		}
		return nil
	})
	// The crashed agent cannot say it is no longer active; the new active one does.
	require.Eventually(t, 5*time.Second, "the crashed gateway marked passive", func() error {
		if err := gatewayState(second, straitv1.HAPassive)(); err != nil {
			return err
		}
		g := &straitv1.Gateway{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: second}, g); err != nil {
			return err
		}
		if r := apimeta.FindStatusCondition(g.Status.Conditions, "Ready"); r == nil || r.Status != metav1.ConditionFalse || r.Reason != straitv1.ReasonGatewayLeaseLost {
			return fmt.Errorf("gateway %s Ready: %+v", second, r)
		}
		return nil
	})
	for _, a := range agents {
		a.stop()
	}
	return graceful, crash
}
