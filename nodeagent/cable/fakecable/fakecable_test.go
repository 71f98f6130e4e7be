package fakecable_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/fakecable"
)

func TestDumpFollowsConvergeAndCleanup(t *testing.T) {
	ctx := context.Background()
	d := fakecable.New(straitv1.CableWireGuard, "pub")
	local := cable.Local{ClusterID: "a", IP: netip.MustParseAddr("192.0.2.1"), Port: 51820,
		CIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}, HealthCheckIP: netip.MustParseAddr("10.1.0.1")}
	c := cable.Remote{ClusterID: "c", IP: netip.MustParseAddr("192.0.2.3"), Port: 51820, PublicKey: "kc",
		CIDRs: []netip.Prefix{netip.MustParsePrefix("10.3.0.0/16")}}
	b := cable.Remote{ClusterID: "b", IP: netip.MustParseAddr("192.0.2.2"), Port: 51820, PublicKey: "kb",
		CIDRs: []netip.Prefix{netip.MustParsePrefix("10.2.0.0/16")}}

	steps := []struct {
		remotes []cable.Remote
		cleanup bool
		want    string
	}{
		{want: "cable wireguard none\n"},
		{remotes: []cable.Remote{c, b}, want: `cable wireguard local a 192.0.2.1:51820 cidrs [10.1.0.0/16] health 10.1.0.1
cable wireguard remote b 192.0.2.2:51820 key "kb" cidrs [10.2.0.0/16]
cable wireguard remote c 192.0.2.3:51820 key "kc" cidrs [10.3.0.0/16]
`},
		{remotes: []cable.Remote{b}, want: `cable wireguard local a 192.0.2.1:51820 cidrs [10.1.0.0/16] health 10.1.0.1
cable wireguard remote b 192.0.2.2:51820 key "kb" cidrs [10.2.0.0/16]
`},
		{cleanup: true, want: "cable wireguard none\n"},
	}
	for i, s := range steps {
		switch {
		case s.cleanup:
			if err := d.Cleanup(ctx); err != nil {
				t.Fatal(err)
			}
		case s.remotes != nil:
			if err := d.Converge(ctx, local, s.remotes); err != nil {
				t.Fatal(err)
			}
		}
		if got := d.Dump(); got != s.want {
			t.Errorf("step %d:\n%s\nwant:\n%s", i, got, s.want)
		}
	}
}

func TestConnectionsAndFailures(t *testing.T) {
	ctx := context.Background()
	d := fakecable.New(straitv1.CableVXLAN, "")
	b := cable.Remote{ClusterID: "b"}
	if err := d.Converge(ctx, cable.Local{ClusterID: "a"}, []cable.Remote{b, b}); err == nil {
		t.Error("a remote listed twice was accepted")
	}
	d.SetDown("b", true)
	conns, _ := d.Connections(ctx)
	if len(conns) != 2 || conns[0].Connected {
		t.Errorf("connections %+v, want b down", conns)
	}
	boom := errors.New("boom")
	d.FailConverge(boom)
	if err := d.Converge(ctx, cable.Local{ClusterID: "a"}, nil); !errors.Is(err, boom) {
		t.Errorf("Converge = %v, want boom", err)
	}
}
