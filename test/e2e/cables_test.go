package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"

	"github.com/straitnet/strait/lab"
	"github.com/straitnet/strait/nodeagent/cable/ipsec"
	"github.com/straitnet/strait/nodeagent/cable/vxlan"
	"github.com/straitnet/strait/nodeagent/cable/wireguard"
	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// TestCables switches the clusterset's cable driver through every driver and checks, for
// each, what a user of each cluster sees from a pod on a plain node and from a pod on a
// gateway node: pod → remote pod and pod → remote ClusterIP (the callee sees the
// caller's pod IP both times), the seed documents' clusterset names resolved
// through CoreDNS, then fetched, and each Peer's latency measured through the cable.
func TestCables(t *testing.T) {
	env.Require(t)
	env.RestoreClusterSetSpec(t)
	env.EnsurePSKSecret(t)
	for _, driver := range []straitv1.CableDriver{straitv1.CableWireGuard, straitv1.CableIPsec, straitv1.CableVXLAN} {
		t.Run(string(driver), func(t *testing.T) {
			start := time.Now()
			if err := env.UpdateClusterSet(t, func(cs *straitv1.ClusterSet) { labtest.SetDriver(cs, driver) }); err != nil {
				t.Fatal(err)
			}
			for _, cluster := range members() {
				env.WaitActiveGateway(t, cluster, driver)
			}
			sources := env.SourcePods(t, "c1")
			remote := env.SamplePods(t, "c2", lab.WhereamiSS)[0]
			require.Eventually(t, labtest.SwitchTimeout, "c1 → c2's pod over "+string(driver), func() error {
				_, err := labtest.TryWhereami(sources[0].NS, net.JoinHostPort(remote.Status.PodIP, "8080"))
				return err
			})
			t.Logf("%s: ClusterSet updated → first GET across: %s", driver, time.Since(start).Round(time.Millisecond))
			// The active gateways' health checks measure through this driver's cable.
			for _, pair := range [][2]string{{"c1", "c2"}, {"c2", "c1"}} {
				latencyMeasured(t, pair[0], pair[1], driver)
			}
			// The cable carries it: the driver's device on c1's active gateway counts the
			// packets, and the other drivers' devices are gone.
			gw := env.ActiveGateway(t, "c1").Namespace
			before, err := devicePackets(gw, cableDevice(driver))
			if err != nil {
				t.Fatal(err)
			}
			for _, src := range sources {
				checkAcross(t, src, remote)
			}
			if after, err := devicePackets(gw, cableDevice(driver)); err != nil || after <= before {
				t.Errorf("%s on %s sent %d → %d packets (%v): the traffic did not go through the %s cable",
					cableDevice(driver), gw, before, after, err, driver)
			}
			for _, other := range []straitv1.CableDriver{straitv1.CableWireGuard, straitv1.CableVXLAN} {
				if other != driver {
					if _, err := devicePackets(gw, cableDevice(other)); err == nil {
						t.Errorf("%s: %s's device %s is still there", gw, other, cableDevice(other))
					}
				}
			}
		})
	}
}

// cableDevice is the device a driver's traffic leaves the gateway through (ipsec: the
// TUN of charon's userspace ESP, which stays while charon runs).
func cableDevice(d straitv1.CableDriver) string {
	switch d {
	case straitv1.CableIPsec:
		return ipsec.LibipsecDevice
	case straitv1.CableVXLAN:
		return vxlan.DeviceName
	}
	return wireguard.DeviceName
}

// devicePackets is how many packets dev in network namespace ns has sent.
func devicePackets(ns, dev string) (uint64, error) {
	out, err := exec.Command("ip", "-n", ns, "-s", "-j", "link", "show", "dev", dev).Output()
	if err != nil {
		return 0, fmt.Errorf("ip -n %s link show %s: %w", ns, dev, err)
	}
	var links []struct {
		Stats struct {
			TX struct {
				Packets uint64 `json:"packets"`
			} `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return 0, fmt.Errorf("ip -j link show %s: %w: %s", dev, err, out)
	}
	if len(links) != 1 {
		return 0, fmt.Errorf("ip -j link show %s: %d links: %s", dev, len(links), out)
	}
	return links[0].Stats.TX.Packets, nil
}

// checkAcross is what a user of c1 checks of c2 from src.
func checkAcross(t *testing.T, src labtest.Source, remote corev1.Pod) {
	t.Helper()
	env.CheckAcross(t, src, "c2", remote)
	where := fmt.Sprintf("from %s on %s (gateway node: %v)", src.Name, src.Node, src.Gateway)
	// The names without a cluster: c2 alone exports, so they too are c2's.
	for _, n := range []struct{ name, port string }{
		{"whereami-cs.sample.svc.clusterset.local", "80"},
		{"whereami-ss.sample.svc.clusterset.local", "8080"},
	} {
		// DNS follows the cable's health: right after a switch a name may wait for the
		// Peer to be connected again, as a user's retry would.
		require.Eventually(t, labtest.Converge, where+": "+n.name, func() error {
			ips, err := labtest.LookupInPod(context.Background(), src.NS, n.name)
			if err != nil {
				return err
			}
			a, err := labtest.TryWhereami(src.NS, net.JoinHostPort(n.name, n.port))
			if err != nil {
				return fmt.Errorf("%v: %w", ips, err)
			}
			if a.Cluster != "c2" {
				return fmt.Errorf("%v answered by %s, want c2", ips, a.Cluster)
			}
			return nil
		})
	}
}
