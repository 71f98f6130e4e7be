package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// TestFrozenGatewayIsFencedOff: the agent of c2's active gateway freezes (SIGSTOP: the
// process, its Lease renewals and its cleanup stop, the kernel state it made stays). The
// standby takes over, and the frozen node's cable port stops answering by itself: the
// kernel's fence (table ip strait-fence) lets the term the agent last wrote run out and
// drops what still comes to the port. c1 → c2 goes through the standby within the crash
// failover's bound of the freeze. Thawed, the agent finds another holder and stays a
// standby; c1 → c2 goes on through the new gateway.
func TestFrozenGatewayIsFencedOff(t *testing.T) {
	env.Require(t)
	src, target := env.CrossTraffic(t, "c1", "c2")
	frozen := env.ActiveGateway(t, "c2")
	agent := env.AgentPod(t, "c2", frozen.Name)
	m := &straitv1.Membership{}
	if err := env.Client(t, "c2").Get(context.Background(), types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, m); err != nil {
		t.Fatal(err)
	}
	port := m.Spec.Cable.Port
	before := fenceDrops(t, frozen.Namespace)

	// c1's GETs from before the freeze: the standby must carry them within the crash
	// failover's bound of the freeze. The frozen agent's process holds the node's
	// WireGuard device, so no answer comes through the frozen node.
	p := labtest.StartProber(src.NS, target)
	time.Sleep(300 * time.Millisecond)
	env.SignalContainer(t, agent, "agent", syscall.SIGSTOP)
	stopped := time.Now()
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			env.SignalContainer(t, agent, "agent", syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)
	var next string
	if _, err := require.Within(30*time.Second, func() error {
		if next = env.ActiveGateway(t, "c2").Name; next == frozen.Name {
			return fmt.Errorf("%s still active", next)
		}
		return nil
	}); err != nil {
		t.Logf("c2's agents, last lines:\n%s", env.StraitLogs(t, "c2", labtest.AgentApp, "agent", 60))
		t.Fatalf("c2: the standby takes over from the frozen agent: %v", err)
	}
	t.Logf("c2's active gateway %s frozen; %s took over within %s", frozen.Name, next, time.Since(stopped).Round(time.Millisecond))
	// Through the new gateway while the old one is still frozen: what breaks after the
	// thaw is then the thaw's doing.
	if !p.WaitAnswered(stopped, 10*time.Second) {
		env.LogAgents(t)
		logCablePaths(t)
		t.Fatalf("c1 → c2 through %s, %s frozen: %s", next, frozen.Name, p.Since(stopped))
	}
	time.Sleep(500 * time.Millisecond)
	o := p.Since(stopped)
	t.Logf("c1 → c2 through %s after the freeze of %s: %s", next, frozen.Name, o)
	if !labtest.BoundOutage(t, fmt.Sprintf("c1 → c2 through %s after the freeze of %s", next, frozen.Name), o, labtest.CrashFailoverBound) {
		env.LogAgents(t)
		logCablePaths(t)
	}

	// From c1's active gateway, over the WAN, to the frozen node's cable port.
	addr := net.JoinHostPort(frozen.WANAddr.Addr().String(), strconv.Itoa(int(port)))
	c1gw := env.ActiveGateway(t, "c1")
	const sent = 20
	conn, err := netns.Dial(context.Background(), c1gw.Namespace, "udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	for range sent {
		if _, err := conn.Write([]byte("still there?")); err != nil {
			t.Fatalf("udp to %s from %s: %v", addr, c1gw.Name, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	conn.Close()
	require.Eventually(t, 5*time.Second, "the frozen node's fence drops what comes to its cable port", func() error {
		if dropped := fenceDrops(t, frozen.Namespace) - before; dropped < sent {
			return fmt.Errorf("%d of %d datagrams to %s dropped by the fence", dropped, sent, addr)
		}
		return nil
	})

	frozenProbe := labtest.StartProber(src.NS, target)
	time.Sleep(2 * time.Second)
	frozenProbe.Gap()
	if tries, answers := frozenProbe.Counts(); answers != tries || tries < 10 {
		t.Errorf("while %s is frozen, %d of %d GETs c1 → c2 answered through %s", frozen.Name, answers, tries, next)
	}

	thaw()
	after := labtest.StartProber(src.NS, target)
	time.Sleep(3 * time.Second)
	if now := env.ActiveGateway(t, "c2").Name; now != next {
		t.Errorf("after the thaw c2's active gateway is %s, want %s to keep it", now, next)
	}
	gap := after.Gap()
	tries, answers := after.Counts()
	t.Logf("after the thaw: %d of %d GETs c1 → c2 answered, longest gap %s", answers, tries, gap.Round(time.Millisecond))
	if answers != tries || tries < 20 {
		t.Errorf("after the thaw %d of %d GETs c1 → c2 answered", answers, tries)
		env.LogAgents(t)
	}
}

// fenceDrops is how many packets the fence of a node has dropped coming in (its input
// chain's counter), as `nft list chain ip strait-fence input` shows it.
func fenceDrops(t testing.TB, ns string) int {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "chain", "ip", kernel.FenceTable, "input").CombinedOutput()
	if err != nil {
		t.Fatalf("nft list chain ip %s input in %s: %v: %s", kernel.FenceTable, ns, err, out)
	}
	m := regexp.MustCompile(`counter packets (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no counter in the fence's input chain in %s:\n%s", ns, out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// logCablePaths logs what decides the path between the clusters: each member's Peers
// (the remote gateway the hub names) and each node's routes in Strait's table.
func logCablePaths(t testing.TB) {
	t.Helper()
	for _, c := range members() {
		t.Logf("%s's Peers:\n%s", c, env.Kubectl(t, c, "-n", straitv1.SystemNamespace, "get", "peers", "-o", "wide"))
		cl, _ := env.Topo.Cluster(c)
		for _, n := range cl.Nodes {
			out, err := exec.Command("ip", "netns", "exec", n.Namespace, "ip", "route", "show", "table", strconv.Itoa(route.Table)).CombinedOutput()
			t.Logf("%s: routes in table %d (%v):\n%s", n.Name, route.Table, err, out)
		}
	}
}
