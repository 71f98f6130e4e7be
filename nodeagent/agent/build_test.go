package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/cli"
	"github.com/straitnet/strait/internal/daemonbuild"
	"github.com/straitnet/strait/test/require"
)

// TestEveryAgentPublishesItsBuild: a gateway-capable and a plain node's agents each put
// their build into the Membership's status (what strait version reads through the hub's
// access), and an agent that stops takes its entry out while the other's stays.
func TestEveryAgentPublishesItsBuild(t *testing.T) {
	cfg, _ := startAPIServer(t)
	c := seedMember(t, cfg)
	startAgent(t, cfg, "gw1", "10.0.1.1")
	plain := startAgent(t, cfg, "plain", "10.0.1.3")
	entries := func() (map[string]straitv1.DaemonStatus, error) {
		m := &straitv1.Membership{}
		if err := c.Get(context.Background(), types.NamespacedName{Namespace: straitv1.SystemNamespace, Name: straitv1.MembershipName}, m); err != nil {
			return nil, err
		}
		out := map[string]straitv1.DaemonStatus{}
		for _, d := range m.Status.Daemons {
			out[d.Name] = d
		}
		return out, nil
	}
	want := cli.Version()
	require.Eventually(t, 10*time.Second, "both agents' builds in the Membership", func() error {
		got, err := entries()
		if err != nil {
			return err
		}
		for _, node := range []string{"gw1", "plain"} {
			d, ok := got["agent/"+node]
			if !ok || d.Daemon != straitv1.DaemonAgent || d.Node != node || d.Build.Version != want.Version || d.Build.Revision != want.Revision {
				return fmt.Errorf("entries %+v: want agent/%s with %s %s", got, node, want.Version, want.Revision)
			}
		}
		return nil
	})
	plain.stop()
	got, err := entries()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["agent/plain"]; ok || len(got) != 1 {
		t.Errorf("after the plain node's agent stopped: %+v, want agent/gw1 alone", got)
	}

	// A daemon killed with its node leaves its entry: the active agent (gw1's, the only
	// one) takes it out at a pass, within the resync (10 s here).
	gone := daemonbuild.Self(straitv1.DaemonAgent, "gone", "", time.Now())
	if err := daemonbuild.Publish(context.Background(), c, straitv1.SystemNamespace, gone); err != nil {
		t.Fatal(err)
	}
	took, err := require.Within(15*time.Second, func() error {
		got, err := entries()
		if _, ok := got[gone.Name]; err == nil && ok {
			err = fmt.Errorf("entries %+v: want %s gone (no Node of that name)", got, gone.Name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the entry of an agent on a node that does not exist went %s after it was written", took.Round(time.Millisecond))
	if got, err = entries(); err != nil || len(got) != 1 {
		t.Errorf("after the prune: %+v, %v; want agent/gw1 alone", got, err)
	}
}
