package route

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/test/require"
)

// path6 is a pod on a node, its cluster's active gateway and a pod of a remote cluster
// behind it, with the route agent's state applied on the node and the gateway:
//
//	pod ── node ══ vx-strait over eth0 ══ gw ── remote
//
// The pods are in 2001:db8:10::/64 (this cluster) and 2001:db8:20::/64 (the remote
// one); the underlay is nodeIP and gwIP and, where they are IPv4, 2001:db8::a:1 and :2 as
// well (a dual-stack cluster network). Every address lies in namespaces the test
// creates; they go with the test.
type path6 struct {
	pod, node, gw, remote *netns.NS
	nodes                 []Node
	input                 Input
	kernels               map[string]*kernel.Linux
}

func newPath6(t *testing.T, nodeIP, gwIP string, underlayPrefix int) *path6 {
	t.Helper()
	p := &path6{pod: netns.New(t, "pod"), node: netns.New(t, "node"), gw: netns.New(t, "gw"), remote: netns.New(t, "remote"),
		kernels: map[string]*kernel.Linux{}}
	for _, ns := range []*netns.NS{p.pod, p.node, p.gw, p.remote} {
		// No duplicate address detection on the new veths: a router whose link-local
		// address is still tentative sends no neighbor solicitation, and the first
		// packets of the test would wait a second or two for it (a node's devices are
		// long up).
		for k, v := range map[string]string{"net/ipv6/conf/all/forwarding": "1", "net/ipv6/conf/default/accept_dad": "0"} {
			if err := ns.SetSysctl(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	netns.Veth(t, p.pod, "eth0", p.node, "pod0")
	netns.Veth(t, p.node, "eth0", p.gw, "eth0")
	netns.Veth(t, p.gw, "remote0", p.remote, "eth0")
	addr6(t, p.pod, "eth0", "2001:db8:10::5/64")
	addr6(t, p.node, "pod0", "2001:db8:10::1/64")
	addr6(t, p.gw, "remote0", "2001:db8:20::1/64")
	addr6(t, p.remote, "eth0", "2001:db8:20::5/64")
	route6(t, p.pod, "::/0", "2001:db8:10::1", "eth0")
	route6(t, p.remote, "::/0", "2001:db8:20::1", "eth0")
	// The cluster network: both nodes on one underlay, which carries IPv6 too.
	addr6(t, p.node, "eth0", fmt.Sprintf("%s/%d", nodeIP, underlayPrefix))
	addr6(t, p.gw, "eth0", fmt.Sprintf("%s/%d", gwIP, underlayPrefix))
	if underlayPrefix != 64 {
		addr6(t, p.node, "eth0", "2001:db8::a:1/64")
		addr6(t, p.gw, "eth0", "2001:db8::a:2/64")
	}
	// The gateway reaches the node's pods through the cluster network (the CNI's route);
	// the node does not route the remote CIDR itself: only vx-strait does.
	route6(t, p.gw, "2001:db8:10::/64", "2001:db8::a:1", "eth0")

	// Nothing routes the remote CIDR yet.
	if src, err := p.whoAmI(t, 300*time.Millisecond); err == nil {
		t.Fatalf("the remote pod answered (seeing %s) before the route agent's state was applied", src)
	}
	p.nodes = []Node{{Name: "node", IP: netip.MustParseAddr(nodeIP)}, {Name: "gw", IP: netip.MustParseAddr(gwIP)}}
	p.input = Input{Nodes: p.nodes, Gateway: p.nodes[1], Underlay: "eth0", UnderlayMTU: 1500,
		RemoteCIDRs: []netip.Prefix{netip.MustParsePrefix("2001:db8:20::/64")}}
	for _, x := range []struct {
		ns   *netns.NS
		self Node
	}{{p.node, p.nodes[0]}, {p.gw, p.nodes[1]}} {
		k, err := kernel.NewLinux(x.ns.Handle)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(k.Close)
		p.kernels[x.self.Name] = k
	}
	p.converge(t)
	return p
}

// converge applies the route agent's state on the node and the gateway.
func (p *path6) converge(t *testing.T) {
	t.Helper()
	for _, self := range p.nodes {
		in := p.input
		in.Self = self
		if err := kernel.Apply(context.Background(), p.kernels[self.Name], Ownership(), Compute(in)); err != nil {
			t.Fatalf("%s: %v", self.Name, err)
		}
	}
}

// whoAmI connects from the pod to the remote pod and returns the source it saw.
func (p *path6) whoAmI(t *testing.T, timeout time.Duration) (string, error) {
	t.Helper()
	src, _, err := whoAmI6(t, p.pod, p.remote, "[2001:db8:20::5]:7000", timeout)
	return src, err
}

// TestIPv6IsRoutedOverVXStraitToTheGateway: on the real kernel, a pod's IPv6 connection
// to a remote cluster's CIDR leaves its node through vx-strait (the route agent's state,
// applied by kernel.Apply) and reaches the remote pod behind the gateway with the pod's
// own address, over an IPv4 underlay (a dual-stack cluster) and over an IPv6 one (an
// IPv6-only cluster). The reply comes back through the cluster network, as in a
// cluster.
func TestIPv6IsRoutedOverVXStraitToTheGateway(t *testing.T) {
	for _, tc := range []struct {
		name           string
		nodeIP, gwIP   string
		underlayPrefix int
	}{
		{name: "over an IPv4 underlay", nodeIP: "10.0.0.1", gwIP: "10.0.0.2", underlayPrefix: 24},
		{name: "over an IPv6 underlay", nodeIP: "2001:db8::a:1", gwIP: "2001:db8::a:2", underlayPrefix: 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Root(t)
			p := newPath6(t, tc.nodeIP, tc.gwIP, tc.underlayPrefix)
			ctx := context.Background()
			before, start := rxPackets(t, p.gw), time.Now()
			src, mss, err := whoAmI6(t, p.pod, p.remote, "[2001:db8:20::5]:7000", 3*time.Second)
			took := time.Since(start)
			t.Logf("connected and answered in %v", took)
			if err != nil {
				d, _ := kernel.Dump(ctx, p.kernels["node"], Ownership())
				t.Fatalf("pod → remote: %v\nnode:\n%s", err, d)
			}
			if src != "2001:db8:10::5" {
				t.Errorf("the remote pod saw %s, want the pod's own 2001:db8:10::5", src)
			}
			// A lost first SYN is sent again after a second: the VTEP's address (no DAD)
			// and the gateway's permanent neighbor entry carry the first packet.
			if took > 900*time.Millisecond {
				t.Errorf("the first connection took %v: its first packet was lost", took)
			}
			if got := rxPackets(t, p.gw) - before; got == 0 {
				t.Error("nothing arrived on the gateway's vx-strait: the connection went another way")
			}
			// Both pods have MTU 1500 (IPv6 MSS 1440); the route through vx-strait has
			// the underlay's MTU less VXLAN's overhead over it, and table ip6 strait's
			// mss-clamp writes that route's MSS into the SYN.
			if routeMSS := 1500 - VXLANOverheadOver(p.nodes[0].IP) - 60; mss <= 0 || mss > routeMSS {
				t.Errorf("the server's MSS is %d, want at most %d (clamped to the route's MTU)", mss, routeMSS)
			} else {
				t.Logf("the server's MSS: %d", mss)
			}

			// The node's whole state, then nothing of it after a cleanup, in both families.
			d, err := kernel.Dump(ctx, p.kernels["node"], Ownership())
			if err != nil {
				t.Fatal(err)
			}
			nodeIP, gwIP := p.nodes[0].IP, p.nodes[1].IP
			for _, want := range []string{
				"  addr " + VTEP6(nodeIP).String() + "/96\n",
				"  neighbor " + VTEP6(gwIP).String() + " lladdr " + VTEPMAC(gwIP) + "\n",
				"route table=4242 proto=242 2001:db8:20::/64 via " + VTEP6(gwIP).String() + " dev vx-strait onlink",
				"rule ip6 pref=4242 table=4242\n",
				"nft table ip6 strait\n",
			} {
				if !strings.Contains(d, want) {
					t.Errorf("the node lacks %q:\n%s", want, d)
				}
			}
			if strings.Contains(d, "nft table ip strait") || strings.Contains(d, "rule pref=") {
				t.Errorf("IPv4 state on a node with nothing of IPv4 to route:\n%s", d)
			}
			for name, k := range p.kernels {
				if err := kernel.Cleanup(ctx, k, Ownership()); err != nil {
					t.Fatal(err)
				}
				if d, err := kernel.Dump(ctx, k, Ownership()); err != nil || d != "" {
					t.Errorf("%s after cleanup: %q, %v", name, d, err)
				}
			}
		})
	}
}

// TestIPv6MasqueradeStaysOffRemoteTraffic: a node whose CNI (or kube-proxy) masquerades
// its pods' IPv6 traffic to anything outside the pod CIDR, in ip6tables' nat table or
// in an nftables table of its own, still sends the pod's connection to the remote
// cluster with the pod's own address: table ip6 strait's keep-remote-source binds the
// identity mapping first. Without that chain the masquerade bites (so the test can
// fail), and the next pass puts it back.
func TestIPv6MasqueradeStaysOffRemoteTraffic(t *testing.T) {
	require.Root(t, "nft", "ip6tables")
	for _, backend := range []string{"ip6tables", "nftables"} {
		t.Run(backend, func(t *testing.T) {
			p := newPath6(t, "10.0.0.1", "10.0.0.2", 24)
			const pods = "2001:db8:10::/64"
			switch backend {
			case "ip6tables":
				p.node.Run(t, "ip6tables", "-w", "-t", "nat", "-I", "POSTROUTING", "-s", pods, "!", "-d", pods, "-j", "MASQUERADE")
			case "nftables":
				p.node.Run(t, "nft", fmt.Sprintf(`add table ip6 cni-masq
add chain ip6 cni-masq postrouting { type nat hook postrouting priority srcnat; }
add rule ip6 cni-masq postrouting ip6 saddr %[1]s ip6 daddr != %[1]s masquerade`, pods))
			}
			kept := func(t *testing.T) {
				t.Helper()
				if src, err := p.whoAmI(t, 2*time.Second); err != nil || src != "2001:db8:10::5" {
					t.Fatalf("the remote pod saw %q (%v), want the pod's own 2001:db8:10::5", src, err)
				}
			}
			kept(t)
			p.node.Run(t, "nft", "flush", "chain", "ip6", NFTable, SourceChain)
			if src, err := p.whoAmI(t, time.Second); err == nil && src == "2001:db8:10::5" {
				t.Fatal("the pod's own address arrived without Strait's chain: the test's masquerade does not bite")
			} else {
				t.Logf("without the chain the remote pod saw %q (%v)", src, err)
			}
			p.converge(t)
			kept(t)
		})
	}
}

// addr6 adds cidr to dev without duplicate address detection (usable at once).
func addr6(t *testing.T, ns *netns.NS, dev, cidr string) {
	t.Helper()
	l, err := ns.NL.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatal(err)
	}
	a.Flags = unix.IFA_F_NODAD
	if err := ns.NL.AddrAdd(l, a); err != nil {
		t.Fatalf("%s: %s on %s: %v", ns.Name, cidr, dev, err)
	}
}

func route6(t *testing.T, ns *netns.NS, dst, gw, dev string) {
	t.Helper()
	l, err := ns.NL.LinkByName(dev)
	if err != nil {
		t.Fatal(err)
	}
	_, ipn, err := net.ParseCIDR(dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.NL.RouteAdd(&netlink.Route{Dst: ipn, Gw: net.ParseIP(gw), LinkIndex: l.Attrs().Index}); err != nil {
		t.Fatalf("%s: route %s via %s: %v", ns.Name, dst, gw, err)
	}
}

func rxPackets(t *testing.T, ns *netns.NS) uint64 {
	t.Helper()
	l, err := ns.NL.LinkByName(VXLANDevice)
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().Statistics.RxPackets
}

// whoAmI6 listens on addr in server, connects from client and returns the source
// address the server saw and the server's MSS for the connection.
func whoAmI6(t *testing.T, client, server *netns.NS, addr string, timeout time.Duration) (string, int, error) {
	t.Helper()
	var ln net.Listener
	if err := server.Do(func() error {
		var err error
		ln, err = net.Listen("tcp6", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		mss := -1
		if raw, err := c.(*net.TCPConn).SyscallConn(); err == nil {
			_ = raw.Control(func(fd uintptr) { mss, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG) })
		}
		fmt.Fprintln(c, host, mss)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var c net.Conn
	if err := client.Do(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, "tcp6", addr)
		return err
	}); err != nil {
		return "", 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	var src string
	var mss int
	if err == nil {
		_, err = fmt.Sscan(line, &src, &mss)
	}
	return src, mss, err
}
