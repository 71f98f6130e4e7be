package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NS is a named network namespace created for one test.
type NS struct {
	// Name is the namespace's name under /var/run/netns.
	Name string
	// Handle is an open handle on the namespace (for netlink.NewHandleAt and
	// nftables.WithNetNSFd).
	Handle netns.NsHandle
	// NL is a netlink handle inside the namespace.
	NL *netlink.Handle
}

// New creates a namespace whose name ends in name, brings its loopback up, enables IPv4
// forwarding in it and removes it when the test ends.
func New(t TB, name string) *NS {
	t.Helper()
	ns, err := Create(uniqueName(name))
	if err != nil {
		t.Fatalf("create netns %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := ns.Close(); err != nil {
			t.Errorf("remove netns %s: %v", ns.Name, err)
		}
	})
	return ns
}

// Create makes a namespace called exactly name with loopback up and forwarding on; the
// caller must Close it.
func Create(name string) (*NS, error) {
	if err := PrepareRunDir(); err != nil {
		return nil, err
	}
	var h netns.NsHandle
	err := onNewThread(func() error {
		orig, err := netns.Get()
		if err != nil {
			return err
		}
		defer orig.Close()
		h, err = netns.NewNamed(name)
		if err != nil {
			return err
		}
		return netns.Set(orig)
	})
	if err != nil {
		return nil, err
	}
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		h.Close()
		_ = netns.DeleteNamed(name)
		return nil, err
	}
	ns := &NS{Name: name, Handle: h, NL: nl}
	lo, err := nl.LinkByName("lo")
	if err == nil {
		err = nl.LinkSetUp(lo)
	}
	if err == nil {
		err = ns.SetSysctl("net/ipv4/ip_forward", "1")
	}
	if err != nil {
		_ = ns.Close()
		return nil, err
	}
	return ns, nil
}

// Close deletes the namespace; everything inside it (links, routes, nftables) goes with
// it once no process holds it.
func (n *NS) Close() error {
	if n.NL != nil {
		n.NL.Close()
	}
	n.Handle.Close()
	return netns.DeleteNamed(n.Name)
}

// Fd is the namespace's file descriptor.
func (n *NS) Fd() int { return int(n.Handle) }

// Path is the namespace's bind mount, for nsenter --net= and ip netns exec.
func (n *NS) Path() string { return Path(n.Name) }

// Do runs fn on a fresh OS thread that is inside the namespace. Sockets opened in fn
// stay in the namespace; goroutines fn starts do not.
func (n *NS) Do(fn func() error) error {
	return onNewThread(func() error {
		if err := netns.Set(n.Handle); err != nil {
			return fmt.Errorf("enter %s: %w", n.Name, err)
		}
		return fn()
	})
}

// onNewThread runs fn on a locked OS thread that is thrown away afterwards, so a thread
// that switched namespaces never runs other goroutines.
func onNewThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the runtime then ends this thread with the goroutine.
		errc <- fn()
	}()
	return <-errc
}

// SetSysctl writes a sysctl under /proc/sys (key like "net/ipv4/ip_forward") inside the
// namespace.
func (n *NS) SetSysctl(key, value string) error { return Sysctl(n.Name, key, value) }

// Command is a command that runs inside the namespace (through `ip netns exec`).
// The test must start it and kill it; CommandContext-style cancellation applies.
func (n *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Veth connects namespaces a and b with a veth pair (aName in a, bName in b), both up.
func Veth(t TB, a *NS, aName string, b *NS, bName string) {
	t.Helper()
	tmpA, tmpB := "v"+uniqueSuffix(), "v"+uniqueSuffix()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: tmpA, Namespace: netlink.NsFd(a.Handle)},
		PeerName: tmpB, PeerNamespace: netlink.NsFd(b.Handle)}
	// Create in a (so no link ever appears on the host), with the peer directly in b.
	if err := a.NL.LinkAdd(veth); err != nil {
		t.Fatalf("veth %s/%s - %s/%s: %v", a.Name, aName, b.Name, bName, err)
	}
	rename(t, a, tmpA, aName)
	rename(t, b, tmpB, bName)
}

func rename(t TB, n *NS, from, to string) {
	t.Helper()
	l, err := n.NL.LinkByName(from)
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	if err := n.NL.LinkSetName(l, to); err != nil {
		t.Fatalf("%s: rename %s to %s: %v", n.Name, from, to, err)
	}
	if err := n.NL.LinkSetUp(l); err != nil {
		t.Fatalf("%s: up %s: %v", n.Name, to, err)
	}
}

// Bridge creates an up bridge in the namespace.
func (n *NS) Bridge(t TB, name string) {
	t.Helper()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: name}}
	if err := n.NL.LinkAdd(br); err != nil {
		t.Fatalf("%s: bridge %s: %v", n.Name, name, err)
	}
	if err := n.NL.LinkSetUp(br); err != nil {
		t.Fatalf("%s: up %s: %v", n.Name, name, err)
	}
}

// Enslave puts dev under the bridge br.
func (n *NS) Enslave(t TB, dev, br string) {
	t.Helper()
	d, err := n.NL.LinkByName(dev)
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	b, err := n.NL.LinkByName(br)
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	if err := n.NL.LinkSetMaster(d, b); err != nil {
		t.Fatalf("%s: enslave %s to %s: %v", n.Name, dev, br, err)
	}
}

// AddAddr adds cidr (like "10.0.0.1/24" or "fd00::1/64", without duplicate address
// detection) to dev.
func (n *NS) AddAddr(t TB, dev, cidr string) {
	t.Helper()
	l, err := n.NL.LinkByName(dev)
	if err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		t.Fatal(err)
	}
	if a.IP.To4() == nil {
		a.Flags |= unix.IFA_F_NODAD // usable at once: a test never waits for duplicate detection
	}
	if err := n.NL.AddrAdd(l, a); err != nil {
		t.Fatalf("%s: addr %s on %s: %v", n.Name, cidr, dev, err)
	}
}

// AddRoute adds a main-table route to dst ("default" or a CIDR) via gw ("" for none)
// out of dev ("" to let the kernel pick).
func (n *NS) AddRoute(t TB, dst, gw, dev string) {
	t.Helper()
	r := &netlink.Route{}
	if dst != "default" {
		_, ipn, err := net.ParseCIDR(dst)
		if err != nil {
			t.Fatal(err)
		}
		r.Dst = ipn
	} else {
		r.Dst = &net.IPNet{IP: net.IPv4zero, Mask: net.CIDRMask(0, 32)}
	}
	if gw != "" {
		r.Gw = net.ParseIP(gw)
	}
	if dev != "" {
		l, err := n.NL.LinkByName(dev)
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		r.LinkIndex = l.Attrs().Index
	}
	if err := n.NL.RouteAdd(r); err != nil {
		t.Fatalf("%s: route %s via %q dev %q: %v", n.Name, dst, gw, dev, err)
	}
}

// Run runs a command in the namespace and fails the test when it fails.
func (n *NS) Run(t TB, name string, args ...string) string {
	t.Helper()
	out, err := n.Command(context.Background(), name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %s %s: %v\n%s", n.Name, name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Addr is a convenience for netip.MustParseAddr.
func Addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func uniqueName(name string) string { return "st" + uniqueSuffix() + "-" + name }

func uniqueSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
