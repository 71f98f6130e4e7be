package lab

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/require"
)

// TestKindnetMasqueradeIsInstalledOnce: both backends put kindnet's masquerade on every
// node of a kindnet-masq cluster, and running lab up again adds nothing.
func TestKindnetMasqueradeIsInstalledOnce(t *testing.T) {
	require.Root(t, "iptables", "nft")
	for _, tc := range []struct {
		backend string
		list    []string
		want    []string
	}{
		{topology.MasqueradeIPTables, []string{"iptables", "-w", "-t", "nat", "-S"}, []string{
			"-A POSTROUTING -m addrtype ! --dst-type LOCAL -m comment --comment \"kind-masq-agent: ensure nat POSTROUTING directs all non-LOCAL destination traffic to our custom KIND-MASQ-AGENT chain\" -j KIND-MASQ-AGENT\n",
			"-A KIND-MASQ-AGENT -d 10.8.0.0/16 -j RETURN\n-A KIND-MASQ-AGENT -j MASQUERADE\n",
		}},
		{topology.MasqueradeNFTables, []string{"nft", "list", "table", "ip", kindnetTable}, []string{
			"type nat hook postrouting priority srcnat; policy accept;\n\t\tfib daddr type local return\n\t\tip daddr 10.8.0.0/16 return\n\t\tmasquerade\n",
		}},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			n1, n2 := netns.New(t, "n1"), netns.New(t, "n2")
			c := topology.Cluster{Name: "c1", PodCIDR: netip.MustParsePrefix("10.8.0.0/16"),
				Shape: topology.ClusterShape{CNI: topology.CNIKindnetMasq, Masquerade: tc.backend},
				Nodes: []topology.Node{{Name: "c1-gw-1", Namespace: n1.Name}, {Name: "c1-node-1", Namespace: n2.Name}}}
			for range 2 {
				if err := ensureCNIMasquerade(context.Background(), c); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range []*netns.NS{n1, n2} {
				got := n.Run(t, tc.list[0], tc.list[1:]...)
				for _, w := range tc.want {
					if strings.Count(got, w) != 1 {
						t.Errorf("%s: want once %q in:\n%s", n.Name, w, got)
					}
				}
			}
		})
	}
}
