package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/dns/corefile"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/netns"
	"github.com/straitnet/strait/test/require"
)

// TestWANPartitionHeals: the WAN drops every packet between the gateways for 10 s; c1 →
// c2 stops, and comes back once it heals, through the same gateways and the same Peer.
func TestWANPartitionHeals(t *testing.T) {
	env.Require(t)
	src, target := crossTraffic(t)
	before := env.ActiveGateway(t, "c2").Name
	p := startProber(src.ns, target)
	time.Sleep(time.Second)
	heal := dropOnWAN(t, 100)
	const partition = 10 * time.Second
	time.Sleep(partition)
	heal()
	p.markOutage()
	took := p.recoveredAfter(t, "c1 → c2 after the WAN heals")
	tries, answers := p.counts()
	gap := p.gap()
	t.Logf("WAN partitioned for %s: %d/%d GETs answered, longest gap %s, traffic back %s after the heal",
		partition, answers, tries, gap.Round(time.Millisecond), took.Round(time.Millisecond))
	if gap < partition {
		t.Errorf("longest gap %s is shorter than the partition %s: the probe did not cross the WAN", gap, partition)
	}
	if after := env.ActiveGateway(t, "c2").Name; after != before {
		t.Errorf("c2's active gateway moved from %s to %s over a WAN partition (its API server was reachable all along)", before, after)
	}
	require.Eventually(t, converge, "c1's Peer c2 Connected again", func() error {
		st, err := peerStatus(t, "c1", "c2")
		if err == nil && !strings.HasPrefix(connectedMessage(st), "True") {
			err = fmt.Errorf("Connected %s", connectedMessage(st))
		}
		return err
	})
}

// TestCharonCrashUnderIPsec: under the ipsec driver, charon on c2's active gateway is
// killed; the kubelet restarts it, the agent loads its connections again, and c1 → c2
// comes back.
func TestCharonCrashUnderIPsec(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	ensurePSKSecret(t)
	if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) { setDriver(cs, straitv1.CableIPsec) }); err != nil {
		t.Fatal(err)
	}
	for _, c := range members() {
		waitActiveGateway(t, c, straitv1.CableIPsec)
	}
	src, target := crossTraffic(t)
	gw := env.ActiveGateway(t, "c2")
	pod := env.AgentPod(t, "c2", gw.Name)
	restarts := labtest.Restarts(pod, "charon")
	p := startProber(src.ns, target)
	time.Sleep(time.Second)
	env.SignalContainer(t, pod, "charon", syscall.SIGKILL)
	p.markOutage()
	env.WaitRestarted(t, "c2", pod, "charon", restarts, 2*time.Minute)
	took := p.recoveredAfter(t, "c1 → c2 after charon's restart")
	time.Sleep(time.Second)
	tries, answers := p.counts()
	gap := p.gap()
	t.Logf("charon killed on %s (ipsec): %d/%d GETs answered, longest gap %s, traffic back %s after the kill",
		gw.Name, answers, tries, gap.Round(time.Millisecond), took.Round(time.Millisecond))
	if tries < 20 {
		t.Errorf("only %d GETs were made", tries)
	}
}

// TestCoreDNSRestart: c1's CoreDNS is killed and started again (lab up); clusterset names
// resolve again at once, with strait dns's block still in the Corefile.
func TestCoreDNSRestart(t *testing.T) {
	env.Require(t)
	src := sourcePods(t, "c1")[0]
	name := "whereami-cs.sample.svc.clusterset.local"
	r := startResolver(src.ns, name)
	time.Sleep(time.Second)
	pid, ok := env.Lab.State().Pid("c1", "coredns")
	if !ok {
		t.Fatal("c1's CoreDNS is not running")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.markOutage()
	require.Eventually(t, 10*time.Second, "c1's CoreDNS gone", func() error {
		if netns.Alive(pid) {
			return fmt.Errorf("pid %d still runs", pid)
		}
		return nil
	})
	env.UpAgain(t)
	took := r.recoveredAfter(t, "c1 resolves "+name+" after CoreDNS's restart")
	time.Sleep(time.Second)
	asked, resolved := r.counts()
	gap := r.gap()
	t.Logf("c1's CoreDNS killed and started again: %d/%d lookups answered, longest gap %s, answering %s after the kill",
		resolved, asked, gap.Round(time.Millisecond), took.Round(time.Millisecond))
	if cf := corefileOf(t, "c1"); !strings.Contains(cf, corefile.BeginMarker) {
		t.Errorf("strait dns's block is gone from c1's Corefile after CoreDNS's restart:\n%s", cf)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := labtest.LookupInPod(ctx, src.ns, name); err != nil {
		t.Errorf("after CoreDNS's restart: %v", err)
	}
}
