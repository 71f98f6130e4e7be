package cabletest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/cable"
)

// Table and Protocol are the routing table and route protocol the lab gives drivers; the
// lab's gateways send everything to Table with a policy rule, as the route agent would.
const (
	Table    = 7310
	Protocol = 207
	rulePref = 7310
)

// Routing is what the lab's drivers are built with.
var Routing = cable.Routing{Table: Table, Protocol: Protocol}

// Site is one cluster in the lab: a gateway namespace on the WAN and a pod namespace
// behind it.
type Site struct {
	ClusterID string
	GatewayNS string
	PodNS     string
	// WANIP is the gateway's address on the WAN: its own, or its NAT router's.
	WANIP netip.Addr
	// NAT is how the gateway sits behind RouterNS; NoNAT for a gateway on the WAN.
	NAT NAT
	// RouterNS is the NAT router between the gateway and the WAN (NAT only).
	RouterNS string
	// PrivateIP is the gateway's own address towards its router (NAT only).
	PrivateIP netip.Addr
	// GatewayPodIP is the gateway's address towards its pod, inside CIDR.
	GatewayPodIP netip.Addr
	// PodIP is the pod's address.
	PodIP netip.Addr
	CIDR  netip.Prefix
	// The same in IPv6: every site is dual-stack inside the cable (CIDR6 beside CIDR).
	// WANIP6 is the gateway's IPv6 address on the WAN (not behind a NAT only), for
	// Over6.
	WANIP6        netip.Addr
	GatewayPodIP6 netip.Addr
	PodIP6        netip.Addr
	CIDR6         netip.Prefix
}

// The lab's IPv6 prefixes: unique local addresses clear of fd00::/64 (the host's own),
// only ever inside the lab's namespaces.
var (
	wan6   = netip.MustParsePrefix("fd73:18::/64")
	cidr6A = netip.MustParsePrefix("fd73:1::/64")
	cidr6B = netip.MustParsePrefix("fd73:2::/64")
	cidr6C = netip.MustParsePrefix("fd73:3::/64")
)

// Lab is two sites on a shared WAN.
type Lab struct {
	WANNS string
	A, B  Site
}

// Namespaces of the lab.
func (l *Lab) Namespaces() []string {
	out := []string{l.A.PodNS, l.B.PodNS, l.A.GatewayNS, l.B.GatewayNS, l.WANNS}
	if l.B.RouterNS != "" {
		out = append(out, l.B.RouterNS)
	}
	return out
}

// NewLab builds the lab and removes it (and every process left in it) when t ends.
func NewLab(t testing.TB) *Lab { return newLab(t, NoNAT) }

func newLab(t testing.TB, nat NAT) *Lab {
	t.Helper()
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	id := "sc" + hex.EncodeToString(b[:])
	l := &Lab{
		WANNS: id + "-wan",
		A: Site{ClusterID: "cluster-a", GatewayNS: id + "-gwa", PodNS: id + "-poda",
			WANIP: netip.MustParseAddr("198.18.0.1"), GatewayPodIP: netip.MustParseAddr("10.1.0.1"),
			PodIP: netip.MustParseAddr("10.1.0.10"), CIDR: netip.MustParsePrefix("10.1.0.0/16"),
			WANIP6: netip.MustParseAddr("fd73:18::1"), GatewayPodIP6: netip.MustParseAddr("fd73:1::1"),
			PodIP6: netip.MustParseAddr("fd73:1::10"), CIDR6: cidr6A},
		B: Site{ClusterID: "cluster-b", GatewayNS: id + "-gwb", PodNS: id + "-podb",
			WANIP: netip.MustParseAddr("198.18.0.2"), GatewayPodIP: netip.MustParseAddr("10.2.0.1"),
			PodIP: netip.MustParseAddr("10.2.0.10"), CIDR: netip.MustParsePrefix("10.2.0.0/16"),
			WANIP6: netip.MustParseAddr("fd73:18::2"), GatewayPodIP6: netip.MustParseAddr("fd73:2::1"),
			PodIP6: netip.MustParseAddr("fd73:2::10"), CIDR6: cidr6B},
	}
	if nat != NoNAT {
		l.B.NAT, l.B.RouterNS, l.B.PrivateIP = nat, id+"-rtb", netip.MustParseAddr("10.250.0.2")
		l.B.WANIP6 = netip.Addr{}
	}
	t.Cleanup(func() { l.destroy(t) })
	for _, ns := range l.Namespaces() {
		if err := netns.Ensure(context.Background(), ns); err != nil {
			t.Fatalf("namespace %s: %v", ns, err)
		}
		// No duplicate address detection on links made from now on: a link-local address
		// stays tentative for a second or two after its link comes up, and neighbor
		// discovery waits for it (the first IPv6 packet through the cable was lost).
		MustRun(t, "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0")
	}
	// No multicast snooping: IPv6 neighbor discovery is multicast, and a bridge that
	// has not yet seen a gateway's MLD report for its solicited-node group dropped the
	// first neighbor solicitations to it (a second or more of silence on the IPv6 WAN).
	MustRun(t, "ip", "-n", l.WANNS, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0")
	MustRun(t, "ip", "-n", l.WANNS, "link", "set", "br0", "up")
	for i, s := range []Site{l.A, l.B} {
		wanPort := fmt.Sprintf("w%d", i)
		onWAN := s.GatewayNS
		if s.NAT != NoNAT {
			onWAN = s.RouterNS
			connectBehindNAT(t, s)
		}
		MustRun(t, "ip", "-n", onWAN, "link", "add", "eth0", "type", "veth", "peer", "name", wanPort, "netns", l.WANNS)
		MustRun(t, "ip", "-n", l.WANNS, "link", "set", wanPort, "master", "br0", "up")
		MustRun(t, "ip", "-n", onWAN, "addr", "add", s.WANIP.String()+"/24", "dev", "eth0")
		MustRun(t, "ip", "-n", onWAN, "link", "set", "eth0", "up")
		// nodad: an address in use at once, and a network state that does not change by
		// itself while the test runs.
		if s.WANIP6.IsValid() {
			MustRun(t, "ip", "-n", onWAN, "addr", "add", prefixOf(s.WANIP6, wan6), "dev", "eth0", "nodad")
		}

		MustRun(t, "ip", "-n", s.PodNS, "link", "add", "eth0", "type", "veth", "peer", "name", "pod0", "netns", s.GatewayNS)
		MustRun(t, "ip", "-n", s.GatewayNS, "addr", "add", s.GatewayPodIP.String()+"/24", "dev", "pod0")
		MustRun(t, "ip", "-n", s.GatewayNS, "link", "set", "pod0", "up")
		MustRun(t, "ip", "-n", s.PodNS, "addr", "add", s.PodIP.String()+"/24", "dev", "eth0")
		MustRun(t, "ip", "-n", s.PodNS, "link", "set", "eth0", "up")
		MustRun(t, "ip", "-n", s.PodNS, "route", "add", "default", "via", s.GatewayPodIP.String())
		MustRun(t, "ip", "-n", s.GatewayNS, "addr", "add", prefixOf(s.GatewayPodIP6, s.CIDR6), "dev", "pod0", "nodad")
		MustRun(t, "ip", "-n", s.PodNS, "addr", "add", prefixOf(s.PodIP6, s.CIDR6), "dev", "eth0", "nodad")
		MustRun(t, "ip", "-n", s.PodNS, "-6", "route", "add", "default", "via", s.GatewayPodIP6.String())

		MustRun(t, "ip", "netns", "exec", s.GatewayNS, "sysctl", "-qw", "net.ipv4.ip_forward=1")
		// Strict reverse-path filtering, as many distributions set it: the cable must
		// pass it (Strait's rule makes the FIB see the remote CIDRs behind the cable).
		MustRun(t, "ip", "netns", "exec", s.GatewayNS, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=1")
		MustRun(t, "ip", "-n", s.GatewayNS, "rule", "add", "pref", fmt.Sprint(rulePref), "lookup", fmt.Sprint(Table))
		MustRun(t, "ip", "netns", "exec", s.GatewayNS, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
		MustRun(t, "ip", "-n", s.GatewayNS, "-6", "rule", "add", "pref", fmt.Sprint(rulePref), "lookup", fmt.Sprint(Table))
	}
	return l
}

func (l *Lab) destroy(t testing.TB) {
	for _, ns := range l.Namespaces() {
		if err := netns.Delete(context.Background(), ns); err != nil {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	}
}

// MustRun runs a command and fails t when it fails; it returns the standard output.
func MustRun(t testing.TB, name string, args ...string) string {
	t.Helper()
	// Standard output only: ip prints "Peer netns reference is invalid" on stderr when
	// another test's namespace goes away while it names link-netns peers, and a state
	// snapshot must not depend on that.
	var stderr strings.Builder
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v: %s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// prefixOf is ip with the length of p, as ip(8) takes an address.
func prefixOf(ip netip.Addr, p netip.Prefix) string {
	return netip.PrefixFrom(ip, p.Bits()).String()
}

// Over6 is s reached over the IPv6 underlay: its gateway's cable address is WANIP6.
func (s Site) Over6() Site {
	s.WANIP = s.WANIP6
	return s
}

// Local is the cable.Local of s's gateway.
func (s Site) Local(port int32, psk []byte) cable.Local {
	l := cable.Local{ClusterID: s.ClusterID, NodeName: s.ClusterID + "-gw", IP: s.WANIP, Advertised: s.WANIP,
		Port: port, CIDRs: []netip.Prefix{s.CIDR, s.CIDR6}, HealthCheckIP: s.GatewayPodIP,
		HealthCheckIPv6: s.GatewayPodIP6, PSK: psk}
	switch s.NAT {
	case NATOneToOne:
		l.IP = s.PrivateIP
	case NATMasquerade:
		l.IP, l.Advertised, l.BehindMasquerade = s.PrivateIP, netip.Addr{}, true
	}
	return l
}

// Remote is the cable.Remote for s's gateway as seen from the other site.
func (s Site) Remote(port int32, publicKey string) cable.Remote {
	r := cable.Remote{ClusterID: s.ClusterID, IP: s.WANIP, Port: port, PublicKey: publicKey,
		CIDRs: []netip.Prefix{s.CIDR, s.CIDR6}}
	if s.NAT == NATMasquerade {
		r.IP, r.BehindMasquerade = netip.Addr{}, true
	}
	return r
}
