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

// TestIPv6IsRoutedOverVXStraitToTheGateway: on the real kernel, a pod's IPv6 connection
// to a remote cluster's CIDR leaves its node through vx-strait (the route agent's state,
// applied by kernel.Apply) and reaches the remote pod behind the gateway with the pod's
// own address, over an IPv4 underlay (a dual-stack cluster) and over an IPv6 one (an
// IPv6-only cluster). The reply comes back through the cluster network, as in a
// cluster. Every address lies in namespaces the test creates (2001:db8::/32 and
// 10.0.0.0/24); they go with the test.
//
//	pod ── node ══ vx-strait over eth0 ══ gw ── remote
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
			pod, node, gw, remote := netns.New(t, "pod"), netns.New(t, "node"), netns.New(t, "gw"), netns.New(t, "remote")
			for _, ns := range []*netns.NS{pod, node, gw, remote} {
				// No duplicate address detection on the new veths: a router whose
				// link-local address is still tentative sends no neighbor solicitation, and
				// the first packets of the test would wait a second or two for it (a node's
				// devices are long up).
				for k, v := range map[string]string{"net/ipv6/conf/all/forwarding": "1", "net/ipv6/conf/default/accept_dad": "0"} {
					if err := ns.SetSysctl(k, v); err != nil {
						t.Fatal(err)
					}
				}
			}
			netns.Veth(t, pod, "eth0", node, "pod0")
			netns.Veth(t, node, "eth0", gw, "eth0")
			netns.Veth(t, gw, "remote0", remote, "eth0")
			addr6(t, pod, "eth0", "2001:db8:10::5/64")
			addr6(t, node, "pod0", "2001:db8:10::1/64")
			addr6(t, gw, "remote0", "2001:db8:20::1/64")
			addr6(t, remote, "eth0", "2001:db8:20::5/64")
			route6(t, pod, "::/0", "2001:db8:10::1", "eth0")
			route6(t, remote, "::/0", "2001:db8:20::1", "eth0")
			// The cluster network: both nodes on one underlay, which carries IPv6 too.
			addr6(t, node, "eth0", fmt.Sprintf("%s/%d", tc.nodeIP, tc.underlayPrefix))
			addr6(t, gw, "eth0", fmt.Sprintf("%s/%d", tc.gwIP, tc.underlayPrefix))
			if tc.underlayPrefix != 64 {
				addr6(t, node, "eth0", "2001:db8::a:1/64")
				addr6(t, gw, "eth0", "2001:db8::a:2/64")
			}
			// The gateway reaches the node's pods through the cluster network (the CNI's
			// route); the node does not route the remote CIDR itself: only vx-strait does.
			route6(t, gw, "2001:db8:10::/64", "2001:db8::a:1", "eth0")

			// Nothing routes the remote CIDR yet.
			if src, err := whoAmI6(t, pod, remote, "[2001:db8:20::5]:7000", 300*time.Millisecond); err == nil {
				t.Fatalf("the remote pod answered (seeing %s) before the route agent's state was applied", src)
			}

			nodes := []Node{{Name: "node", IP: netip.MustParseAddr(tc.nodeIP)}, {Name: "gw", IP: netip.MustParseAddr(tc.gwIP)}}
			in := Input{Nodes: nodes, Gateway: nodes[1], Underlay: "eth0", UnderlayMTU: 1500,
				RemoteCIDRs: []netip.Prefix{netip.MustParsePrefix("2001:db8:20::/64")}}
			ctx := context.Background()
			kernels := map[string]*kernel.Linux{}
			for _, x := range []struct {
				ns   *netns.NS
				self Node
			}{{node, nodes[0]}, {gw, nodes[1]}} {
				k, err := kernel.NewLinux(x.ns.Handle)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(k.Close)
				kernels[x.self.Name] = k
				in.Self = x.self
				if err := kernel.Apply(ctx, k, Ownership(), Compute(in)); err != nil {
					t.Fatalf("%s: %v", x.self.Name, err)
				}
			}

			before, start := rxPackets(t, gw), time.Now()
			src, err := whoAmI6(t, pod, remote, "[2001:db8:20::5]:7000", 3*time.Second)
			took := time.Since(start)
			t.Logf("connected and answered in %v", took)

			if err != nil {
				d, _ := kernel.Dump(ctx, kernels["node"], Ownership())
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
			if got := rxPackets(t, gw) - before; got == 0 {
				t.Error("nothing arrived on the gateway's vx-strait: the connection went another way")
			}

			// The node's whole state, then nothing of it after a cleanup, in both families.
			d, err := kernel.Dump(ctx, kernels["node"], Ownership())
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"  addr " + VTEP6(nodes[0].IP).String() + "/96\n",
				"  neighbor " + VTEP6(nodes[1].IP).String() + " lladdr " + VTEPMAC(nodes[1].IP) + "\n",
				"route table=4242 proto=242 2001:db8:20::/64 via " + VTEP6(nodes[1].IP).String() + " dev vx-strait onlink",
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
			for name, k := range kernels {
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
// address the server saw.
func whoAmI6(t *testing.T, client, server *netns.NS, addr string, timeout time.Duration) (string, error) {
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
		fmt.Fprintln(c, host)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var c net.Conn
	if err := client.Do(func() error {
		var err error
		c, err = (&net.Dialer{}).DialContext(ctx, "tcp6", addr)
		return err
	}); err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}
