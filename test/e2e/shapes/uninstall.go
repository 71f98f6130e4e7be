package shapes

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/labtest"
)

// bypass lists the agent's masquerade bypass on a node: the chain keep-remote-source
// in table ip strait, at the nat hook.
func bypass(ns string) (string, error) {
	return netns.Exec(context.Background(), ns, "", "nft", "list", "chain", "ip", route.NFTable, route.SourceChain)
}

// counters are what nft(8) prints of a rule's counter: they move with traffic, the rule
// stays the same.
var counters = regexp.MustCompile(`counter packets \d+ bytes \d+`)

// UninstallLeavesTheCNIAsItWas uninstalls Strait as docs/install.md tells users
// (labtest's Env.Uninstall, the one TestUninstallLeavesNothing uses) on a lab whose
// CNIs masquerade: the bypass, there on every node before, is gone from every node with
// the rest of Strait's kernel state and objects; the CNI's masquerade rules are what they
// were; and the clusters' own networking is what it was (OwnNetworkingIsUnchanged: pod
// → pod and ClusterIP unmasqueraded, the internet masqueraded to the node, NodePort).
// It leaves the lab without Strait, so the suite runs it last.
func UninstallLeavesTheCNIAsItWas(t *testing.T, env *labtest.Env) {
	before := map[string]string{}
	for _, c := range env.Topo.Clusters {
		for _, n := range c.Nodes {
			if out, err := bypass(n.Namespace); err != nil || !strings.Contains(out, "hook postrouting") || !strings.Contains(out, "snat to ip saddr") {
				t.Errorf("%s: no masquerade bypass while Strait is installed: %v\n%s", n.Name, err, out)
			}
			out, err := Masquerade(c, n)
			if err != nil {
				t.Fatalf("%s: %v", n.Name, err)
			}
			before[n.Name] = counters.ReplaceAllString(out, "counter")
		}
	}
	env.Uninstall(t)
	env.CheckNothingLeft(t)
	for _, c := range env.Topo.Clusters {
		for _, n := range c.Nodes {
			if out, err := bypass(n.Namespace); err == nil {
				t.Errorf("%s: the masquerade bypass is left after the uninstall:\n%s", n.Name, out)
			}
			out, err := Masquerade(c, n)
			if after := counters.ReplaceAllString(out, "counter"); err != nil || after != before[n.Name] {
				t.Errorf("%s: the CNI's masquerade changed with the uninstall (%v):\nbefore:\n%s\nafter:\n%s", n.Name, err, before[n.Name], after)
			}
		}
	}
	OwnNetworkingIsUnchanged(t, env)
}
