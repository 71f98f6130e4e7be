package hostnet

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/lab/topology"
	"github.com/straitnet/strait/test/require"
)

func TestResolvers(t *testing.T) {
	conf := "# generated\nsearch example.org\nnameserver 10.255.255.53\nnameserver fd00::53\nnameserver  192.0.2.53 # second\noptions ndots:2\n"
	var got []string
	for _, r := range Resolvers([]byte(conf), "/etc/resolv.conf") {
		got = append(got, r.Prefix.String()+" "+r.What)
	}
	want := []string{"10.255.255.53/32 resolver 10.255.255.53 (/etc/resolv.conf)", "fd00::53/128 resolver fd00::53 (/etc/resolv.conf)",
		"192.0.2.53/32 resolver 192.0.2.53 (/etc/resolv.conf)"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestLinkInAStandInHost runs Ranges, Ensure and Remove in a namespace that plays the
// host (a network and a default route like this machine's), with a second one playing
// the lab's internet namespace: the lab's ranges route into the lab and nothing else
// changes, reading leaves the lab's link out, a stray route on the link goes, and Remove
// takes link and routes away, twice without error. The stand-in host has IPv6 as this
// machine has (fd00::2/64, a default route via fd00::1) and the lab is dual-stack: its
// IPv6 range routes into the lab beside the IPv4 ones, the host's own IPv6 keeps its way.
func TestLinkInAStandInHost(t *testing.T) {
	require.Root(t, "ip")
	host, in, outside := netns.New(t, "host"), netns.New(t, "internet"), netns.New(t, "outside")
	netns.Veth(t, host, "eth0", outside, "eth0")
	host.AddAddr(t, "eth0", "192.0.2.2/24")
	host.AddRoute(t, "0.0.0.0/0", "192.0.2.1", "eth0")
	host.Run(t, "ip", "addr", "add", "fd00::2/64", "dev", "eth0", "nodad")
	host.Run(t, "ip", "-6", "route", "add", "default", "via", "fd00::1", "dev", "eth0")
	hl := topology.HostLink{Name: topology.HostLinkName, Addr: netip.MustParsePrefix("198.18.1.253/30"),
		PeerNamespace: in.Name, Peer: topology.HostLinkPeer, PeerAddr: netip.MustParsePrefix("198.18.1.254/30"),
		Addr6: netip.MustParsePrefix("fd10:1ab:0:201::fd/126"), PeerAddr6: netip.MustParsePrefix("fd10:1ab:0:201::fe/126"),
		Routes: []netip.Prefix{netip.MustParsePrefix("10.8.0.0/16"), netip.MustParsePrefix("10.250.0.0/16"), netip.MustParsePrefix("198.18.0.0/24"),
			netip.MustParsePrefix("fd10:1ab::/48")}}
	routeGet := func(dst string) string { return host.Run(t, "ip", "-o", "route", "get", dst) }
	var before []topology.HostRange
	if err := host.Do(func() (err error) {
		if err = Ensure(hl); err != nil {
			return err
		}
		if err = Ensure(hl); err != nil { // again: nothing to do
			return err
		}
		before, err = Ranges(hl.Name)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, r := range before {
		seen = append(seen, r.Prefix.String()+" "+r.What)
		if strings.Contains(r.What, hl.Name) || r.Prefix.Bits() > 0 && (r.Prefix.Overlaps(hl.Addr) || r.Prefix.Overlaps(hl.Addr6)) {
			t.Errorf("Ranges gave the lab's own %s %s", r.Prefix, r.What)
		}
	}
	for _, want := range []string{"0.0.0.0/0 route 0.0.0.0/0 via 192.0.2.1 dev eth0", "192.0.2.0/24 route 192.0.2.0/24 dev eth0",
		"192.0.2.2/32 address 192.0.2.2/24 on eth0",
		"::/0 route ::/0 via fd00::1 dev eth0", "fd00::/64 route fd00::/64 dev eth0", "fd00::2/128 address fd00::2/64 on eth0"} {
		if !slices.Contains(seen, want) {
			t.Errorf("Ranges lacks %q: %q", want, seen)
		}
	}
	for _, dst := range []string{"10.8.3.2", "10.250.1.2", "198.18.0.11", "198.18.1.254", "fd10:1ab:0:8003::4", "fd10:1ab:0:201::1"} {
		if got := routeGet(dst); !strings.Contains(got, " dev "+hl.Name+" ") {
			t.Errorf("route get %s: %s, want dev %s", dst, got, hl.Name)
		}
	}
	for _, dst := range []string{"10.255.255.53", "203.0.113.80", "10.9.0.1", "fd00::53", "fd11:1ab::1", "2001:db8::1"} {
		if got := routeGet(dst); !strings.Contains(got, " dev eth0 ") {
			t.Errorf("route get %s: %s, want the host's own default route (dev eth0)", dst, got)
		}
	}
	// A route of an older lab on the link goes at the next Ensure.
	host.Run(t, "ip", "route", "add", "10.99.0.0/16", "via", "198.18.1.254", "dev", hl.Name)
	host.Run(t, "ip", "-6", "route", "add", "fd20:1ab::/48", "via", "fd10:1ab:0:201::fe", "dev", hl.Name)
	if err := host.Do(func() error { return Ensure(hl) }); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{"10.99.0.1", "fd20:1ab::1"} {
		if got := routeGet(dst); !strings.Contains(got, " dev eth0 ") {
			t.Errorf("a route no longer wanted stayed: %s", got)
		}
	}
	if err := host.Do(func() error { return errors.Join(Remove(hl.Name), Remove(hl.Name)) }); err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{"10.8.3.2", "10.250.1.2", "fd10:1ab:0:8003::4"} {
		if got := routeGet(dst); !strings.Contains(got, " dev eth0 ") {
			t.Errorf("after Remove, route get %s: %s", dst, got)
		}
	}
	if out := in.Run(t, "ip", "-o", "link", "show"); strings.Contains(out, hl.Peer) {
		t.Errorf("after Remove the peer is left in %s: %s", in.Name, out)
	}
	if err := host.Do(func() error {
		if Exists(hl.Name) {
			t.Errorf("after Remove %s exists", hl.Name)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
