package agent

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
)

// TestDataplaneSequenceOnFake converges a fake node through a sequence of cluster
// states (gateway changes, peers coming and going, globalnet ingress, the Membership
// removed), records each step's dump, then replays the steps in random orders on fresh
// fakes: every step must give the same dump whatever came before, and a second pass
// must change nothing.
func TestDataplaneSequenceOnFake(t *testing.T) {
	type step struct {
		name string
		snap func() Snapshot
	}
	steps := []step{
		{"gw1 active, plain node", func() Snapshot { return snapshot("gw1", false) }},
		{"gw2 active", func() Snapshot { s := snapshot("gw1", false); s.ActiveGateway = "gw2"; return s }},
		{"second peer", func() Snapshot {
			s := snapshot("gw1", false)
			p := s.Peers[0]
			p.Name, p.Spec.ClusterID, p.Spec.CIDRs = "g3", "g3", []string{"10.30.0.0/16"}
			s.Peers = append(s.Peers, p)
			return s
		}},
		{"globalnet with ingress", func() Snapshot { return snapshot("gw1", true) }},
		{"globalnet, endpoint moved", func() Snapshot {
			s := snapshot("gw1", true)
			s.Endpoints["demo/web"] = []netip.Addr{netip.MustParseAddr("10.7.2.9"), netip.MustParseAddr("10.7.3.9")}
			return s
		}},
		{"no peers", func() Snapshot { s := snapshot("gw1", false); s.Peers = nil; return s }},
		{"membership removed", func() Snapshot { s := snapshot("gw1", false); s.Membership = nil; return s }},
	}
	ctx := context.Background()
	newNode := func() (*kernel.Fake, *Dataplane) {
		f := kernel.NewFake(kernel.Link{Name: "eth0", Kind: "veth", MTU: 9000, Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/24")}},
			kernel.Link{Name: "wan", Kind: "veth", MTU: 9000})
		return f, NewDataplane(f)
	}
	run := func(t *testing.T, f *kernel.Fake, dp *Dataplane, s step) string {
		t.Helper()
		snap := s.snap()
		snap.Links, _ = f.Links(ctx)
		if _, err := dp.Converge(ctx, snap); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		d, err := kernel.Dump(ctx, f, route.Ownership())
		if err != nil {
			t.Fatal(err)
		}
		n := f.Calls()
		if _, err := dp.Converge(ctx, snap); err != nil || f.Calls() != n {
			t.Fatalf("%s: second pass made %d changes (%v)", s.name, f.Calls()-n, err)
		}
		return d
	}
	f, dp := newNode()
	want := map[string]string{}
	for _, s := range steps {
		want[s.name] = run(t, f, dp, s)
	}
	if !strings.Contains(want["gw2 active"], "via 241.0.0.2 dev vx-strait") || !strings.Contains(want["globalnet with ingress"], "gn-svc-dnat") ||
		!strings.Contains(want["globalnet, endpoint moved"], "242.1.0.10 . 1 : 10.7.3.9") || want["membership removed"] != "" {
		t.Fatalf("in-order dumps are not what the steps describe:\n%v", want)
	}
	rng := rand.New(rand.NewPCG(4, 2))
	for round := range 5 {
		f, dp := newNode()
		for _, i := range rng.Perm(len(steps)) {
			if got := run(t, f, dp, steps[i]); got != want[steps[i].name] {
				t.Fatalf("round %d, step %q after others:\n%s\nwant:\n%s", round, steps[i].name, got, want[steps[i].name])
			}
		}
	}
}
