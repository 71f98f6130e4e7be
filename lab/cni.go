package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/topology"
)

// kindnetChain is the chain kindnet's masquerade agent keeps in iptables' nat table.
const kindnetChain = "KIND-MASQ-AGENT"

// kindnetTable is the nftables table of the nftables variant of the same masquerade.
const kindnetTable = "kindnet-masq"

// kindnetMasquerade is what kindnet installs on every node, in iptables' nat table or as
// an nftables table: traffic to anything that is neither the node itself nor inside the
// cluster's pod CIDR leaves from the node's address; in-cluster traffic does not.
// iptables holds the commands as iptables(8) arguments, nft one nft -f script; both are
// idempotent (the nft script recreates its chain's rules, iptables is checked with -C
// before -A).
func kindnetMasquerade(pods netip.Prefix) (iptables [][]string, nft string) {
	iptables = [][]string{
		{"-t", "nat", "-A", "POSTROUTING", "-m", "addrtype", "!", "--dst-type", "LOCAL",
			"-m", "comment", "--comment", "kind-masq-agent: ensure nat POSTROUTING directs all non-LOCAL destination traffic to our custom KIND-MASQ-AGENT chain",
			"-j", kindnetChain},
		{"-t", "nat", "-A", kindnetChain, "-d", pods.String(), "-j", "RETURN"},
		{"-t", "nat", "-A", kindnetChain, "-j", "MASQUERADE"},
	}
	nft = fmt.Sprintf(`add table ip %[1]s
add chain ip %[1]s postrouting { type nat hook postrouting priority srcnat; }
flush chain ip %[1]s postrouting
add rule ip %[1]s postrouting fib daddr type local return
add rule ip %[1]s postrouting ip daddr %[2]s return
add rule ip %[1]s postrouting masquerade
`, kindnetTable, pods)
	return iptables, nft
}

// ensureCNIMasquerade installs the kindnet-like masquerade on every node of a
// kindnet-masq cluster (flannel's clusters get theirs from flanneld).
func ensureCNIMasquerade(ctx context.Context, c topology.Cluster) error {
	if c.Shape.CNI != topology.CNIKindnetMasq {
		return nil
	}
	rules, script := kindnetMasquerade(c.PodCIDR)
	var errs []error
	for _, n := range c.Nodes {
		switch c.Shape.Masquerade {
		case topology.MasqueradeNFTables:
			errs = append(errs, runIn(ctx, n.Namespace, script, "nft", "-f", "-"))
		default:
			errs = append(errs, ensureIPTables(ctx, n.Namespace, rules))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: the %s masquerade (%s): %w", c.Name, c.Shape.CNI, c.Shape.Masquerade, err)
	}
	return nil
}

// ensureRouterNAT puts the cluster's gateways behind its router: the public addresses of
// a 1:1 NAT on the router's WAN leg, its table (topology.Router.NATRuleset) and short UDP
// conntrack timeouts (topology.RouterUDPTimeout). A router without gateway NAT is left
// as it is. The table goes with the router's namespace on "lab down".
func ensureRouterNAT(ctx context.Context, r topology.Router) error {
	script := r.NATRuleset()
	if script == "" {
		return nil
	}
	for _, p := range r.PublicAddrs() {
		if err := netns.IP(ctx, "-n", r.Namespace, "addr", "replace", p.String(), "dev", topology.NodeWANLink); err != nil {
			return err
		}
	}
	if err := runIn(ctx, r.Namespace, script, "nft", "-f", "-"); err != nil {
		return fmt.Errorf("table %s: %w", topology.RouterTable, err)
	}
	// The conntrack sysctls exist in a namespace once it has a NAT table. Timestamps tell
	// a mapping that lived on from one made again (a test idles past the timeout).
	timeout := strconv.Itoa(topology.RouterUDPTimeout)
	for k, v := range map[string]string{"net/netfilter/nf_conntrack_udp_timeout": timeout,
		"net/netfilter/nf_conntrack_udp_timeout_stream": timeout, "net/netfilter/nf_conntrack_timestamp": "1"} {
		if err := netns.Sysctl(r.Namespace, k, v); err != nil {
			return err
		}
	}
	return nil
}

// runIn runs argv in a node's namespace.
func runIn(ctx context.Context, ns, stdin string, argv ...string) error {
	_, err := netns.Exec(ctx, ns, stdin, argv...)
	return err
}

// ensureIPTables appends each rule that is not there yet, creating the chains it names.
func ensureIPTables(ctx context.Context, ns string, rules [][]string) error {
	if runIn(ctx, ns, "", "iptables", "-w", "-t", "nat", "-S", kindnetChain) != nil {
		if err := runIn(ctx, ns, "", "iptables", "-w", "-t", "nat", "-N", kindnetChain); err != nil {
			return err
		}
	}
	for _, r := range rules {
		check := append([]string{"iptables", "-w"}, r...)
		for i, a := range check {
			if a == "-A" {
				check[i] = "-C"
			}
		}
		if runIn(ctx, ns, "", check...) == nil {
			continue
		}
		if err := runIn(ctx, ns, "", append([]string{"iptables", "-w"}, r...)...); err != nil {
			return err
		}
	}
	return nil
}
