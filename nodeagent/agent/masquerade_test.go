package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/require"
)

// cniMasquerade installs on every node of cl the masquerade a CNI installs for its pod
// CIDR: kindnet's and the bridge plugin's ipMasq (pods to anything outside the pod CIDR)
// and flannel's --ip-masq second rule (anything outside it to pods on other nodes), in
// iptables' nat table (iptables-nft, as kube-proxy's iptables mode and most CNIs write
// it) or in an nftables table of the CNI's own (flannel's EnableNFTables). first puts
// the rules at the head of POSTROUTING, as a CNI's resync may.
func cniMasquerade(t *testing.T, cl *labCluster, backend string, first bool) {
	t.Helper()
	pods := cl.membership.Spec.PodCIDRs[0]
	for _, n := range cl.nodes {
		switch backend {
		case "iptables":
			op := "-A"
			if first {
				op = "-I"
			}
			n.ns.Run(t, "iptables", "-w", "-t", "nat", op, "POSTROUTING", "-s", pods, "!", "-d", pods, "-j", "MASQUERADE")
			n.ns.Run(t, "iptables", "-w", "-t", "nat", op, "POSTROUTING", "!", "-s", pods, "-d", pods, "-j", "MASQUERADE")
		case "nftables":
			n.ns.Run(t, "nft", fmt.Sprintf(`add table ip cni-masq
add chain ip cni-masq postrouting { type nat hook postrouting priority srcnat; }
flush chain ip cni-masq postrouting
add rule ip cni-masq postrouting ip saddr %[1]s ip daddr != %[1]s masquerade
add rule ip cni-masq postrouting ip saddr != %[1]s ip daddr %[1]s masquerade`, pods))
		default:
			t.Fatalf("no masquerade backend %q", backend)
		}
	}
}

// TestCNIMasqueradeStaysOffRemoteTraffic: on nodes whose CNI masquerades, traffic between
// clusters keeps its addresses both ways, from a plain node and from the gateway, while
// the CNI's own masquerade of everything else stays as it was; without the agent's
// chain the same checks fail (so they can), and the agent puts it back.
func TestCNIMasqueradeStaysOffRemoteTraffic(t *testing.T) {
	require.Root(t, "iptables", "nft")
	for _, backend := range []string{"iptables", "nftables"} {
		t.Run(backend, func(t *testing.T) {
			l := newLab(t, false)
			c1, c2 := l.clusters[0], l.clusters[1]
			for _, cl := range l.clusters {
				for _, n := range cl.nodes {
					n.pod.ServeEcho(t, "0.0.0.0:7000")
				}
				cniMasquerade(t, cl, backend, false)
			}
			// "The internet" for c1's pods: anything outside its pod CIDR, here the
			// passive gateway's own address.
			outside := c1.node("gw2")
			outside.ns.ServeEcho(t, "10.0.1.2:7001")
			client := c1.node("node")
			internet := func(t *testing.T) {
				t.Helper()
				got, err := client.pod.WhoAmI("10.0.1.2:7001", timeout)
				if err != nil || got != "10.0.1.3" {
					t.Fatalf("pod → outside the cluster: server saw %q (%v), want the node's address 10.0.1.3 (the CNI's masquerade)", got, err)
				}
			}
			internet(t)
			l.converge()

			kept := func(t *testing.T) {
				t.Helper()
				for _, c := range []struct{ from, to *labNode }{
					{client, c2.node("node")},         // plain node → remote plain node
					{c1.node("gw1"), c2.node("node")}, // the active gateway's own pod
					{c2.node("node"), client},         // remote → a pod behind the gateway, another node
					{c2.node("gw2"), c1.node("gw1")},  // remote passive gateway's pod → the active gateway's pod
					{client, c1.node("gw2")},          // in-cluster across nodes: the CNI leaves it alone
				} {
					if got := reach(t, c.from, c.to.podIP); got != c.from.podIP.String() {
						t.Errorf("%s → %s: server saw %s, want the caller's pod IP %s", c.from.name, c.to.name, got, c.from.podIP)
					}
				}
			}
			t.Run("addresses kept between clusters", kept)
			t.Run("the CNI still masquerades the rest", internet)

			t.Run("a CNI that rewrites its rules at the head of the chain is still kept off", func(t *testing.T) {
				cniMasquerade(t, c1, backend, true)
				cniMasquerade(t, c2, backend, true)
				kept(t)
				internet(t)
			})

			t.Run("without the agent's chain the CNI masquerades remote traffic, until the next pass", func(t *testing.T) {
				for _, cl := range l.clusters {
					for _, n := range cl.nodes {
						n.ns.Run(t, "nft", "flush", "chain", "ip", route.NFTable, route.SourceChain)
					}
				}
				// As in a cluster: the connection leaves from the node's vx-strait address,
				// which the other cluster does not route back, and times out.
				if got, err := client.pod.WhoAmI(c2.node("node").podIP.String()+":7000", timeout); err == nil && got == client.podIP.String() {
					t.Fatalf("server saw the caller's pod IP %s without Strait's chain: the test's masquerade does not bite", got)
				} else {
					t.Logf("without the chain: server saw %q (%v)", got, err)
				}
				l.converge()
				kept(t)
			})

			t.Run("cleanup leaves the CNI's masquerade as it was", func(t *testing.T) {
				for _, cl := range l.clusters {
					for _, n := range cl.nodes {
						if err := n.dp.Cleanup(context.Background(), nil); err != nil {
							t.Fatal(err)
						}
					}
				}
				internet(t)
			})
		})
	}
}

// TestGlobalnetEgressWinsOverCNIMasquerade: under globalnet a pod's connection to a
// remote global IP leaves from one of its cluster's egress IPs, not from the address the
// CNI's masquerade would give it.
func TestGlobalnetEgressWinsOverCNIMasquerade(t *testing.T) {
	require.Root(t, "iptables", "nft")
	for _, backend := range []string{"iptables", "nftables"} {
		t.Run(backend, func(t *testing.T) {
			l := newLab(t, true)
			g1, g2 := l.clusters[0], l.clusters[1]
			exportEcho(t, g2)
			for _, cl := range l.clusters {
				cniMasquerade(t, cl, backend, true)
			}
			l.converge()
			for _, from := range []*labNode{g1.node("node"), g1.node("gw1")} {
				got, err := from.pod.WhoAmI("242.2.0.10:80", timeout)
				if err != nil {
					t.Fatalf("%s → 242.2.0.10:80: %v", from.name, err)
				}
				if got != "242.1.0.1" && got != "242.1.0.2" {
					t.Errorf("%s → 242.2.0.10:80: server saw %s, want one of g1's egress IPs 242.1.0.1, 242.1.0.2", from.name, got)
				}
			}
		})
	}
}
