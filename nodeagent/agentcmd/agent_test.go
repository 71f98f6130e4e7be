package agentcmd

import (
	"bytes"
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/require"
)

// TestAgentCleanupLeavesNothing: `straitd agent --dump` shows what the agent programmed
// into a node namespace and `straitd agent --cleanup` removes all of it, also a cable
// driver's routes, and nothing else.
func TestAgentCleanupLeavesNothing(t *testing.T) {
	require.Root(t)
	ctx := context.Background()
	node, gw := netns.New(t, "node"), netns.New(t, "gw")
	netns.Veth(t, node, "eth0", gw, "eth0")
	node.AddAddr(t, "eth0", "10.0.1.3/24")
	node.AddRoute(t, "10.50.0.0/16", "10.0.1.2", "eth0") // someone else's route: must stay
	k, err := kernel.NewLinux(node.Handle)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	st := route.Compute(route.Input{
		Self: route.Node{Name: "node", IP: netip.MustParseAddr("10.0.1.3")}, Gateway: route.Node{Name: "gw", IP: netip.MustParseAddr("10.0.1.2")},
		Underlay: "eth0", UnderlayMTU: 1500, RemoteCIDRs: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16")},
	})
	if err := kernel.Apply(ctx, k, route.Ownership(), st); err != nil {
		t.Fatal(err)
	}
	node.Run(t, "ip", "route", "add", "10.30.0.0/16", "dev", "eth0", "table", "4242", "proto", "243")

	var out bytes.Buffer
	if err := runAgent(ctx, &agentOptions{dump: true, netnsPath: node.Path()}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"link vx-strait vxlan", "route table=4242 proto=242 10.20.0.0/16", "rule pref=4242 table=4242", "nft table ip strait"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--dump lacks %q:\n%s", want, out.String())
		}
	}
	if err := runAgent(ctx, &agentOptions{cleanup: true, netnsPath: node.Path()}, &out, &out); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runAgent(ctx, &agentOptions{dump: true, netnsPath: node.Path()}, &out, &out); err != nil || out.String() != "" {
		t.Fatalf("after --cleanup, --dump prints %q (%v)", out.String(), err)
	}
	if r := node.Run(t, "ip", "route", "show", "table", "all"); strings.Contains(r, "4242") || !strings.Contains(r, "10.50.0.0/16 via 10.0.1.2") {
		t.Errorf("routes after --cleanup:\n%s", r)
	}
}

// TestAgentCommandRejectsBadElectionTiming: a Lease duration the Lease cannot carry, or
// a renew deadline that would let two gateways be active at once, is refused before the
// agent touches anything.
func TestAgentCommandRejectsBadElectionTiming(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--lease-duration", "1500ms"}, "--lease-duration 1.5s: must be a whole number of seconds"},
		{[]string{"--lease-duration", "2s", "--renew-deadline", "2s"}, "--renew-deadline 2s: must be shorter than --lease-duration 2s"},
		{[]string{"--retry-period", "1s"}, "--renew-deadline 700ms: must be longer than --retry-period 1s × 1.2"},
	} {
		cmd := NewCommand()
		cmd.SetArgs(append([]string{"--node-name", "n1", "--kubeconfig", "/nonexistent", "--netns", "/nonexistent"}, tc.args...))
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
