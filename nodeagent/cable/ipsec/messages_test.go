package ipsec

import (
	"context"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strongswan/govici/vici"

	"github.com/straitnet/strait/nodeagent/cable"
)

var (
	localA = cable.Local{ClusterID: "cluster-a", IP: netip.MustParseAddr("192.0.2.1"), Port: 4500,
		CIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("10.101.0.0/16")}}
	remoteB = cable.Remote{ClusterID: "cluster-b", IP: netip.MustParseAddr("198.51.100.2"), Port: 4501,
		CIDRs: []netip.Prefix{netip.MustParsePrefix("10.2.7.9/16")}}
)

// The message charon receives, read back the way charon would.
func TestConnForMessage(t *testing.T) {
	c, err := connFor(localA, remoteB)
	if err != nil {
		t.Fatal(err)
	}
	m, err := vici.MarshalMessage(map[string]conn{ConnName(remoteB.ClusterID): c})
	if err != nil {
		t.Fatal(err)
	}
	sec := m.Get("strait-cluster-b").(*vici.Message)
	for key, want := range map[string]any{
		"version": "2", "local_addrs": []string{"192.0.2.1"}, "remote_addrs": []string{"198.51.100.2"},
		"local_port": "4500", "remote_port": "4501", "encap": "yes", "mobike": "no",
	} {
		if got := sec.Get(key); !equal(got, want) {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
	for side, id := range map[string]string{"local": "cluster-a", "remote": "cluster-b"} {
		auth := sec.Get(side).(*vici.Message)
		if auth.Get("auth") != "psk" || auth.Get("id") != id {
			t.Errorf("%s auth = %v/%v, want psk/%s", side, auth.Get("auth"), auth.Get("id"), id)
		}
	}
	ch := sec.Get("children").(*vici.Message).Get("strait-cluster-b").(*vici.Message)
	for key, want := range map[string]any{
		"local_ts":  []string{"10.1.0.0/16", "10.101.0.0/16"},
		"remote_ts": []string{"10.2.0.0/16"}, // masked
		"mode":      "tunnel", "start_action": "none",
	} {
		if got := ch.Get(key); !equal(got, want) {
			t.Errorf("child %s = %v, want %v", key, got, want)
		}
	}
}

// A dual-stack cable has both families in its one child's selectors, in the order given;
// over an IPv6 underlay the gateways' addresses are IPv6.
func TestConnForDualStackOverIPv6(t *testing.T) {
	pfx := netip.MustParsePrefix
	local := cable.Local{ClusterID: "cluster-a", IP: netip.MustParseAddr("fd73:18::1"), Port: 4500,
		CIDRs: []netip.Prefix{pfx("10.1.0.0/16"), pfx("fd73:1::5/64")}}
	remote := cable.Remote{ClusterID: "cluster-b", IP: netip.MustParseAddr("fd73:18::2"), Port: 4500,
		CIDRs: []netip.Prefix{pfx("10.2.0.0/16"), pfx("fd73:2::/64")}}
	c, err := connFor(local, remote)
	if err != nil {
		t.Fatal(err)
	}
	ch := c.Children[ConnName(remote.ClusterID)]
	if want := []string{"10.1.0.0/16", "fd73:1::/64"}; !slices.Equal(ch.LocalTS, want) {
		t.Errorf("local_ts = %v, want %v", ch.LocalTS, want)
	}
	if want := []string{"10.2.0.0/16", "fd73:2::/64"}; !slices.Equal(ch.RemoteTS, want) {
		t.Errorf("remote_ts = %v, want %v", ch.RemoteTS, want)
	}
	if !slices.Equal(c.LocalAddrs, []string{"fd73:18::1"}) || !slices.Equal(c.RemoteAddrs, []string{"fd73:18::2"}) {
		t.Errorf("addresses %v → %v, want fd73:18::1 → fd73:18::2", c.LocalAddrs, c.RemoteAddrs)
	}
	sa := ikeSA{LocalHost: "fd73:18:0::1", RemoteHost: "fd73:18::0:2"} // another spelling
	if !current(sa, local, remote) {
		t.Errorf("an SA between the gateways' IPv6 addresses, spelt otherwise, is not current")
	}
}

// Exactly one end initiates, and only that end restarts a dead connection.
func TestOneEndInitiates(t *testing.T) {
	localB := cable.Local{ClusterID: "cluster-b", IP: remoteB.IP, Port: remoteB.Port, CIDRs: remoteB.CIDRs}
	remoteA := cable.Remote{ClusterID: "cluster-a", IP: localA.IP, Port: localA.Port, CIDRs: localA.CIDRs}
	if initiates(localA, remoteB) == initiates(localB, remoteA) {
		t.Fatal("both or neither end initiate")
	}
	a, _ := connFor(localA, remoteB)
	b, _ := connFor(localB, remoteA)
	if got := a.Children["strait-cluster-b"]; got.DPDAction != "restart" || got.CloseAction != "start" {
		t.Errorf("initiator's child: %+v", got)
	}
	if got := b.Children["strait-cluster-a"]; got.DPDAction != "clear" || got.CloseAction != "none" {
		t.Errorf("responder's child: %+v", got)
	}
}

func TestConnForRefusesIncompleteEnds(t *testing.T) {
	noCIDRs := remoteB
	noCIDRs.CIDRs = nil
	noIP := remoteB
	noIP.IP = netip.Addr{}
	for _, r := range []cable.Remote{noCIDRs, noIP} {
		if _, err := connFor(localA, r); err == nil {
			t.Errorf("connFor(%+v) accepted", r)
		}
	}
}

func TestClusterOf(t *testing.T) {
	if c, ok := clusterOf("strait-cluster-b"); !ok || c != "cluster-b" {
		t.Errorf("clusterOf(strait-cluster-b) = %q, %v", c, ok)
	}
	if _, ok := clusterOf("site-to-site"); ok {
		t.Error("a connection that is not ours was claimed")
	}
}

func TestCharonConf(t *testing.T) {
	conf, err := Charon{Dir: "/var/lib/strait/charon", NATTPort: 4599, Libipsec: true}.Conf()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"load = kernel-libipsec kernel-netlink ", "vici ", "port_nat_t = 4599",
		"socket = unix:///var/lib/strait/charon/charon.vici", "install_routes = no",
		"routing_table = 220", "routing_table_prio = 32000", "keep_alive = 10s",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("strongswan.conf lacks %q:\n%s", want, conf)
		}
	}
	conf, _ = Charon{Dir: "/x", NATTPort: 4500}.Conf()
	if !strings.Contains(conf, "load = kernel-netlink ") {
		t.Errorf("kernel-libipsec loaded without Libipsec:\n%s", conf)
	}
	if argv := (Charon{Binary: "/bin/charon", Dir: "/d"}).Argv(); argv[0] != "unshare" || !slices.Equal(argv[len(argv)-2:], []string{"/bin/charon", "/d"}) {
		t.Errorf("charon not in a mount namespace of its own: %q", argv)
	}
	if argv := (Charon{Binary: "/bin/charon", SharedRun: true}).Argv(); !slices.Equal(argv, []string{"/bin/charon"}) {
		t.Errorf("with SharedRun: %q, want charon alone", argv)
	}
	for _, dir := range []string{"/run", "/var/run/", "/", ""} {
		if err := (Charon{Dir: dir}).checkDir(); err == nil {
			t.Errorf("directory %q accepted", dir)
		}
	}
	// The lab keeps its state under /run: a Dir there is bound back into charon's /run.
	for _, dir := range []string{"/run/strait-lab/c1/charon/gw-1", "/var/lib/strait/charon"} {
		if err := (Charon{Dir: dir}).checkDir(); err != nil {
			t.Errorf("directory %q refused: %v", dir, err)
		}
	}
}

func equal(got, want any) bool {
	switch w := want.(type) {
	case []string:
		g, ok := got.([]string)
		return ok && slices.Equal(g, w)
	default:
		return got == want
	}
}

// Without a charon there is nothing of ours in it: Cleanup (as `straitd agent --cleanup`
// on a node that never ran the ipsec cable) succeeds.
func TestCleanupWithoutCharon(t *testing.T) {
	d, err := New(Config{VICISocket: filepath.Join(t.TempDir(), "charon.vici"), Routing: cable.Routing{Table: 7310, Protocol: 207}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Cleanup(context.Background()); err != nil {
		t.Errorf("Cleanup without charon: %v", err)
	}
}
