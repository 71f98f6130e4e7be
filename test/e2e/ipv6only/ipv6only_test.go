package ipv6only

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/lab/workload"
	"github.com/straitnet/strait/nodeagent/cable/wireguard"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// TestIPv6OnlyClusters: two IPv6-only clusters joined by Strait over an IPv6 underlay.
// Every sample pod has one address, IPv6, in its cluster's pod CIDR; each member's Peer
// of the other is Connected, health-checked over ICMPv6 alone, and the cable runs over
// IPv6: the active Gateway advertises
// its IPv6 WAN address and the Peer's endpoint is the remote gateway's. From c1's pods on
// a plain and a gateway node, c2's pod, c2's ClusterIP and the clusterset names answer
// over IPv6 seeing the caller's own IPv6 address; whereami-cs's clusterset name has an
// AAAA record (and no A) that strait dns answers with c1's IPv6 clusterset IP, which
// answers from c2; and c2's pods reach c1's pods the other way. Both ways the traffic
// crosses the WireGuard device of the active gateways (the lab's routers would carry it
// too).
func TestIPv6OnlyClusters(t *testing.T) {
	env.Require(t)
	others := map[string]string{"c1": "c2", "c2": "c1"}
	for _, cluster := range []string{"c1", "c2"} {
		c, ok := env.Topo.Cluster(cluster)
		if !ok || !c.IPv6Only() {
			t.Fatalf("%s is not IPv6-only in the lab's topology", cluster)
		}
		for _, p := range env.SamplePods(t, cluster, lab.WhereamiCS) {
			if len(p.Status.PodIPs) != 1 || !c.PodCIDR6.Contains(netip.MustParseAddr(p.Status.PodIP)) {
				t.Errorf("%s pod %s: addresses %v, want one in %s", cluster, p.Name, p.Status.PodIPs, c.PodCIDR6)
			}
		}
		cableOverIPv6(t, cluster, others[cluster])
	}

	t.Run("c1 to c2", func(t *testing.T) {
		remote := env.SamplePods(t, "c2", lab.WhereamiCS)[0]
		sources := env.SourcePods(t, "c1")
		for _, src := range sources {
			env.CheckAcross(t, src, "c2", remote)
		}
		// The lab's routers would carry c1 → c2 too (its internet routes every member's
		// ranges back): the cable's device on both active gateways must count the GETs.
		to := net.JoinHostPort(remote.Status.PodIP, strconv.Itoa(workload.WhereamiPort))
		throughTheCable(t, "c1", "c2", func() {
			for range 10 {
				if _, err := labtest.TryWhereami(sources[0].NS, to); err != nil {
					t.Errorf("c1 → %s: %v", to, err)
				}
			}
		})
	})

	t.Run("the clusterset IP", func(t *testing.T) {
		c1, _ := env.Topo.Cluster("c1")
		csIP := netip.MustParseAddr(env.ClusterSetIP(t, "c1", lab.WhereamiCS))
		if !c1.ServiceCIDR6.Contains(csIP) {
			t.Errorf("whereami-cs's clusterset IP %s outside c1's service CIDR %s", csIP, c1.ServiceCIDR6)
		}
		ns, caller := env.ClientNamespace(t, "c1")
		name := lab.WhereamiCS + "." + lab.SampleNamespace + ".svc.clusterset.local."
		r := labtest.PodResolver(ns)
		require.Eventually(t, labtest.Converge, "AAAA "+name, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			got, err := r.LookupNetIP(ctx, "ip6", name)
			if err == nil && (len(got) != 1 || got[0] != csIP) {
				return fmt.Errorf("AAAA %s = %v, want %s", name, got, csIP)
			}
			return err
		})
		// NOERROR with no address: an error (SERVFAIL, a timeout) is not an empty answer.
		if rcode, got, err := labtest.QueryInPod(ns, name, dns.TypeA); err != nil || rcode != dns.RcodeSuccess || len(got) != 0 {
			t.Errorf("A %s: %s %v, %v; want NOERROR and no address (an IPv6-only clusterset)", name, dns.RcodeToString[rcode], got, err)
		}
		to := net.JoinHostPort(csIP.String(), "80")
		var a workload.Answer
		require.Eventually(t, labtest.Converge, "GET "+to, func() error {
			var err error
			a, err = labtest.TryWhereamiWithin(ns, to, 2*time.Second)
			if err == nil && (a.Cluster != "c2" || a.Caller != caller.String()) {
				err = fmt.Errorf("answered %+v, want c2 seeing %s", a, caller)
			}
			return err
		})
		t.Logf("c1's client %s -> the clusterset IP [%s]:80 answered by %s on %s", caller, csIP, a.Pod, a.Node)
	})

	t.Run("c2 to c1", func(t *testing.T) {
		remote := env.SamplePods(t, "c1", lab.WhereamiCS)[0]
		ns, caller := env.ClientNamespace(t, "c2")
		to := net.JoinHostPort(remote.Status.PodIP, strconv.Itoa(workload.WhereamiPort))
		throughTheCable(t, "c2", "c1", func() {
			for range 10 {
				a, err := labtest.TryWhereami(ns, to)
				if err != nil || a.Pod != remote.Name || a.Caller != caller.String() {
					t.Errorf("c2's client -> c1's pod %s: %+v, %v; want %s answering, seeing %s", to, a, err, remote.Name, caller)
				}
			}
		})
	})
}

// cableOverIPv6 checks that cluster's Peer of remote is Connected, over IPv6: cluster's
// active Gateway advertises its IPv6 WAN address, and the Peer's endpoint is the IPv6
// WAN address of remote's active gateway.
func cableOverIPv6(t *testing.T, cluster, remote string) {
	t.Helper()
	gw, remoteGW := env.ActiveGateway(t, cluster), env.ActiveGateway(t, remote)
	c := env.Client(t, cluster)
	ctx := context.Background()
	g := &straitv1.Gateway{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: gw.Name}, g); err != nil {
		t.Fatal(err)
	}
	if g.Spec.IP != gw.WANAddr6.Addr().String() {
		t.Errorf("%s's Gateway %s advertises %q, want its IPv6 WAN address %s", cluster, gw.Name, g.Spec.IP, gw.WANAddr6.Addr())
	}
	peer := &straitv1.Peer{}
	require.Eventually(t, labtest.Converge, cluster+"'s Peer "+remote+" Connected over IPv6", func() error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: straitv1.SystemNamespace, Name: remote}, peer); err != nil {
			return err
		}
		cond := apimeta.FindStatusCondition(peer.Status.Conditions, "Connected")
		if peer.Status.State != "Connected" || cond == nil || cond.Status != metav1.ConditionTrue {
			return fmt.Errorf("state %q, condition %+v", peer.Status.State, cond)
		}
		ep, err := netip.ParseAddrPort(peer.Status.Endpoint)
		if err != nil || ep.Addr() != remoteGW.WANAddr6.Addr() {
			return fmt.Errorf("endpoint %q, want %s's gateway %s at [%s]", peer.Status.Endpoint, remote, remoteGW.Name, remoteGW.WANAddr6.Addr())
		}
		// Health-checked over ICMPv6 alone, answered: IPv6 is the one family they share.
		if hc := peer.Status.HealthChecks; len(hc) != 1 || hc[0].Family != corev1.IPv6Protocol || hc[0].Received == 0 || hc[0].LatencyMicros == 0 {
			return fmt.Errorf("health checks %+v, want one round of IPv6's, answered", hc)
		}
		return nil
	})
	t.Logf("%s: Peer %s %s via %s, endpoint %s, gateway %s advertises %s; health checks %+v", cluster, remote, peer.Status.State,
		peer.Status.Gateway, peer.Status.Endpoint, g.Name, g.Spec.IP, peer.Status.HealthChecks)
}

// throughTheCable checks that traffic sent by send crossed the WireGuard cable: the
// device on from's active gateway sent, and the one on to's received, at least 30
// packets more (10 HTTP exchanges, each more than 3 packets a way; the gateways'
// ICMPv6 health checks only add to the counts, never make up for GETs the routers took).
func throughTheCable(t *testing.T, from, to string, send func()) {
	t.Helper()
	out, in := env.ActiveGateway(t, from).Namespace, env.ActiveGateway(t, to).Namespace
	tx0, _, err := devicePackets(out, wireguard.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	_, rx0, err := devicePackets(in, wireguard.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	send()
	tx1, _, err1 := devicePackets(out, wireguard.DeviceName)
	_, rx1, err2 := devicePackets(in, wireguard.DeviceName)
	if err := errors.Join(err1, err2); err != nil || tx1-tx0 < 30 || rx1-rx0 < 30 {
		t.Errorf("%s on %s sent %d packets, on %s received %d (%v): want at least 30 each, the traffic did not take the cable",
			wireguard.DeviceName, out, tx1-tx0, in, rx1-rx0, err)
	} else {
		t.Logf("%s → %s through the cable: %s sent %d packets on %s, received %d on %s", from, to, wireguard.DeviceName, tx1-tx0, out, rx1-rx0, in)
	}
}

// devicePackets is how many packets dev in network namespace ns has sent and received.
func devicePackets(ns, dev string) (tx, rx uint64, err error) {
	out, err := exec.Command("ip", "-n", ns, "-s", "-j", "link", "show", "dev", dev).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("ip -n %s link show %s: %w", ns, dev, err)
	}
	var links []struct {
		Stats struct {
			TX struct {
				Packets uint64 `json:"packets"`
			} `json:"tx"`
			RX struct {
				Packets uint64 `json:"packets"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return 0, 0, fmt.Errorf("ip -j link show %s: %w: %s", dev, err, out)
	}
	if len(links) != 1 {
		return 0, 0, fmt.Errorf("ip -j link show %s: %d links: %s", dev, len(links), out)
	}
	return links[0].Stats.TX.Packets, links[0].Stats.RX.Packets, nil
}
