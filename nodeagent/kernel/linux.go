package kernel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"

	"github.com/straitnet/strait/nodeagent/nldump"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Linux is the Kernel of one network namespace, through netlink, /proc/sys and
// nftables.
type Linux struct {
	ns netns.NsHandle
	nl *netlink.Handle
	// procSys is where /proc/sys is writable: a container that is not privileged sees
	// /proc/sys read-only and gets the host's /proc/sys/net mounted elsewhere.
	procSys string

	// fencedPort is the port the fence's table was built for (0: not built by us).
	fenceMu    sync.Mutex
	fencedPort uint16

	// lostWatches counts the netlink subscriptions Watch lost and made again.
	lostWatches atomic.Int64
}

// NewLinux binds to the namespace ns; netns.None() means the caller's own.
func NewLinux(ns netns.NsHandle) (*Linux, error) {
	var (
		nl  *netlink.Handle
		err error
	)
	if ns.IsOpen() {
		nl, err = netlink.NewHandleAt(ns)
	} else {
		nl, err = netlink.NewHandle()
	}
	if err != nil {
		return nil, fmt.Errorf("netlink handle: %w", err)
	}
	return &Linux{ns: ns, nl: nl, procSys: "/proc/sys"}, nil
}

// UseProcSys makes the kernel read and write sysctls under dir instead of /proc/sys
// (a mount of /proc/sys/net at dir/net). Sysctls under /proc/sys/net are those of the
// network namespace of the thread that opens them, whatever the mount. Empty keeps
// /proc/sys.
func (l *Linux) UseProcSys(dir string) {
	if dir != "" {
		l.procSys = dir
	}
}

// Close releases the netlink handle (not the namespace).
func (l *Linux) Close() { l.nl.Close() }

// inNS runs fn on a throw-away OS thread inside the namespace.
func (l *Linux) inNS(fn func() error) error {
	if !l.ns.IsOpen() {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := netns.Set(l.ns); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

func (l *Linux) Links(context.Context) ([]Link, error) {
	links, err := nldump.Retry(l.nl.LinkList)
	if err != nil {
		return nil, err
	}
	names := map[int]string{}
	for _, nl := range links {
		names[nl.Attrs().Index] = nl.Attrs().Name
	}
	out := make([]Link, 0, len(links))
	for _, nl := range links {
		a := nl.Attrs()
		lk := Link{Name: a.Name, Kind: nl.Type(), MTU: a.MTU, Up: a.Flags&net.FlagUp != 0, MAC: a.HardwareAddr.String()}
		addrs, err := nldump.Retry(func() ([]netlink.Addr, error) { return l.nl.AddrList(nl, netlink.FAMILY_ALL) })
		if err != nil {
			return nil, fmt.Errorf("addresses of %s: %w", a.Name, err)
		}
		for _, ad := range addrs {
			// IPv6 link-local addresses are the kernel's own, on every device.
			if p, ok := prefixOf(ad.IPNet); ok && !(p.Addr().Is6() && p.Addr().IsLinkLocalUnicast()) {
				lk.Addrs = append(lk.Addrs, p)
			}
		}
		if vx, ok := nl.(*netlink.Vxlan); ok {
			local, _ := addrOf(vx.SrcAddr)
			lk.VXLAN = &VXLAN{VNI: vx.VxlanId, Port: vx.Port, Local: local, Parent: names[vx.VtepDevIndex]}
			neighs, err := nldump.Retry(func() ([]netlink.Neigh, error) { return l.nl.NeighList(a.Index, unix.AF_BRIDGE) })
			if err != nil {
				return nil, fmt.Errorf("fdb of %s: %w", a.Name, err)
			}
			for _, n := range neighs {
				if isZeroMAC(n.HardwareAddr) && n.IP != nil {
					if ip, ok := addrOf(n.IP); ok {
						lk.FDB = append(lk.FDB, ip)
					}
				}
			}
			if lk.Neighbors, err = l.permanentNeighbors(a.Index); err != nil {
				return nil, fmt.Errorf("neighbors of %s: %w", a.Name, err)
			}
		}
		out = append(out, lk)
	}
	return out, nil
}

// permanentNeighbors are the link's permanent neighbor entries, ARP's and NDP's; the
// ones the kernel resolved itself are not ours.
func (l *Linux) permanentNeighbors(index int) ([]Neighbor, error) {
	var out []Neighbor
	for _, family := range []int{unix.AF_INET, unix.AF_INET6} {
		neighs, err := nldump.Retry(func() ([]netlink.Neigh, error) { return l.nl.NeighList(index, family) })
		if err != nil {
			return nil, err
		}
		for _, n := range neighs {
			ip, ok := addrOf(n.IP)
			if ok && n.State&netlink.NUD_PERMANENT != 0 && len(n.HardwareAddr) == 6 {
				out = append(out, Neighbor{IP: ip, MAC: n.HardwareAddr.String()})
			}
		}
	}
	return out, nil
}

// addrOf is ip as a netip.Addr: 4 bytes for an IPv4 address in either form, 16 for
// IPv6.
func addrOf(ip net.IP) (netip.Addr, bool) {
	if ip4 := ip.To4(); ip4 != nil {
		return netip.AddrFromSlice(ip4)
	}
	if len(ip) == net.IPv6len {
		return netip.AddrFromSlice(ip)
	}
	return netip.Addr{}, false
}

func isZeroMAC(m net.HardwareAddr) bool {
	for _, b := range m {
		if b != 0 {
			return false
		}
	}
	return len(m) == 6
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	ip, ok := addrOf(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(ip, ones), true
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func (l *Linux) AddLink(_ context.Context, lk Link) error {
	if lk.Kind != "vxlan" || lk.VXLAN == nil {
		return fmt.Errorf("only vxlan links can be created, not %q", lk.Kind)
	}
	vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: lk.Name, MTU: lk.MTU},
		VxlanId: lk.VXLAN.VNI, Port: lk.VXLAN.Port, Learning: true}
	if lk.MAC != "" {
		mac, err := net.ParseMAC(lk.MAC)
		if err != nil {
			return fmt.Errorf("link %s: MAC: %w", lk.Name, err)
		}
		vx.HardwareAddr = mac
	}
	if lk.VXLAN.Local.IsValid() {
		vx.SrcAddr = lk.VXLAN.Local.AsSlice()
	}
	if lk.VXLAN.Parent != "" {
		p, err := l.nl.LinkByName(lk.VXLAN.Parent)
		if err != nil {
			return fmt.Errorf("parent %s: %w", lk.VXLAN.Parent, err)
		}
		vx.VtepDevIndex = p.Attrs().Index
	}
	if err := l.nl.LinkAdd(vx); err != nil {
		return err
	}
	if lk.Up {
		return l.nl.LinkSetUp(vx)
	}
	return nil
}

func (l *Linux) SetLink(_ context.Context, name string, mtu int, up bool) error {
	lk, err := l.nl.LinkByName(name)
	if err != nil {
		return err
	}
	if lk.Attrs().MTU != mtu {
		if err := l.nl.LinkSetMTU(lk, mtu); err != nil {
			return err
		}
	}
	if up {
		return l.nl.LinkSetUp(lk)
	}
	return l.nl.LinkSetDown(lk)
}

func (l *Linux) SetMAC(_ context.Context, name, mac string) error {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		return fmt.Errorf("link %s: MAC: %w", name, err)
	}
	lk, err := l.nl.LinkByName(name)
	if err != nil {
		return err
	}
	return l.nl.LinkSetHardwareAddr(lk, hw)
}

func (l *Linux) DeleteLink(_ context.Context, name string) error {
	lk, err := l.nl.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return err
	}
	return ignore(l.nl.LinkDel(lk), unix.ENODEV)
}

func (l *Linux) AddAddr(_ context.Context, link string, p netip.Prefix) error {
	lk, err := l.nl.LinkByName(link)
	if err != nil {
		return err
	}
	a := &netlink.Addr{IPNet: ipNet(p)}
	if p.Addr().Is6() {
		// Usable at once, not after a second of duplicate address detection: a VTEP
		// that moves in a failover must carry traffic as soon as it is there.
		a.Flags = unix.IFA_F_NODAD
	}
	return l.nl.AddrAdd(lk, a)
}

func (l *Linux) DelAddr(_ context.Context, link string, p netip.Prefix) error {
	lk, err := l.nl.LinkByName(link)
	if err != nil {
		return nil
	}
	return ignore(l.nl.AddrDel(lk, &netlink.Addr{IPNet: ipNet(p)}), unix.EADDRNOTAVAIL, unix.ENOENT)
}

func fdbEntry(index int, dst netip.Addr) *netlink.Neigh {
	return &netlink.Neigh{LinkIndex: index, Family: unix.AF_BRIDGE, State: netlink.NUD_PERMANENT,
		Flags: netlink.NTF_SELF, IP: dst.AsSlice(), HardwareAddr: make(net.HardwareAddr, 6)}
}

func (l *Linux) AddFDB(_ context.Context, link string, dst netip.Addr) error {
	lk, err := l.nl.LinkByName(link)
	if err != nil {
		return err
	}
	return l.nl.NeighAppend(fdbEntry(lk.Attrs().Index, dst))
}

func (l *Linux) DelFDB(_ context.Context, link string, dst netip.Addr) error {
	lk, err := l.nl.LinkByName(link)
	if err != nil {
		return nil
	}
	return ignore(l.nl.NeighDel(fdbEntry(lk.Attrs().Index, dst)), unix.ENOENT)
}

// neighborOn is n as a permanent entry on link.
func (l *Linux) neighborOn(link string, n Neighbor) (*netlink.Neigh, error) {
	mac, err := net.ParseMAC(n.MAC)
	if err != nil {
		return nil, fmt.Errorf("neighbor %s: MAC: %w", n.IP, err)
	}
	lk, err := l.nl.LinkByName(link)
	if err != nil {
		return nil, err
	}
	family := unix.AF_INET
	if FamilyOf(n.IP) == IPv6 {
		family = unix.AF_INET6
	}
	return &netlink.Neigh{LinkIndex: lk.Attrs().Index, Family: family, State: netlink.NUD_PERMANENT,
		IP: n.IP.AsSlice(), HardwareAddr: mac}, nil
}

func (l *Linux) SetNeighbor(_ context.Context, link string, n Neighbor) error {
	e, err := l.neighborOn(link, n)
	if err != nil {
		return err
	}
	return l.nl.NeighSet(e)
}

func (l *Linux) DelNeighbor(_ context.Context, link string, n Neighbor) error {
	e, err := l.neighborOn(link, n)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		return nil
	case err != nil:
		return err
	}
	return ignore(l.nl.NeighDel(e), unix.ENOENT)
}

func (l *Linux) Routes(_ context.Context, protocol int) ([]Route, error) {
	rs, err := nldump.Retry(func() ([]netlink.Route, error) {
		return l.nl.RouteListFiltered(netlink.FAMILY_ALL,
			&netlink.Route{Protocol: netlink.RouteProtocol(protocol), Table: unix.RT_TABLE_UNSPEC},
			netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return nil, err
	}
	links, err := nldump.Retry(l.nl.LinkList)
	if err != nil {
		return nil, err
	}
	names := map[int]string{}
	for _, lk := range links {
		names[lk.Attrs().Index] = lk.Attrs().Name
	}
	out := make([]Route, 0, len(rs))
	for _, r := range rs {
		if r.Family != unix.AF_INET && r.Family != unix.AF_INET6 {
			continue
		}
		o := Route{Table: r.Table, Protocol: int(r.Protocol), Dev: names[r.LinkIndex],
			Onlink: r.Flags&int(netlink.FLAG_ONLINK) != 0, MTU: r.MTU}
		switch p, ok := prefixOf(r.Dst); {
		case ok:
			o.Dst = p
		case r.Family == unix.AF_INET6:
			o.Dst = netip.MustParsePrefix("::/0")
		default:
			o.Dst = netip.MustParsePrefix("0.0.0.0/0")
		}
		if ip, ok := addrOf(r.Gw); ok {
			o.Gw = ip
		}
		if ip, ok := addrOf(r.Src); ok {
			o.Src = ip
		}
		out = append(out, o)
	}
	return out, nil
}

func (l *Linux) route(r Route) (*netlink.Route, error) {
	nr := &netlink.Route{Table: r.Table, Protocol: netlink.RouteProtocol(r.Protocol), Dst: ipNet(r.Dst), MTU: r.MTU}
	if r.Dev != "" {
		lk, err := l.nl.LinkByName(r.Dev)
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", r.Dev, err)
		}
		nr.LinkIndex = lk.Attrs().Index
	}
	if r.Gw.IsValid() {
		nr.Gw = r.Gw.AsSlice()
	}
	if r.Src.IsValid() {
		nr.Src = r.Src.AsSlice()
	}
	if r.Onlink {
		nr.Flags = int(netlink.FLAG_ONLINK)
	}
	return nr, nil
}

func (l *Linux) ReplaceRoute(_ context.Context, r Route) error {
	nr, err := l.route(r)
	if err != nil {
		return err
	}
	return l.nl.RouteReplace(nr)
}

func (l *Linux) DeleteRoute(_ context.Context, r Route) error {
	// Scope "nowhere" matches a route of any scope (device routes are scope link).
	nr := &netlink.Route{Table: r.Table, Protocol: netlink.RouteProtocol(r.Protocol), Dst: ipNet(r.Dst),
		Scope: netlink.SCOPE_NOWHERE}
	return ignore(l.nl.RouteDel(nr), unix.ESRCH, unix.ENOENT)
}

func (l *Linux) Rules(context.Context) ([]Rule, error) {
	rs, err := nldump.Retry(func() ([]netlink.Rule, error) { return l.nl.RuleList(netlink.FAMILY_ALL) })
	if err != nil {
		return nil, err
	}
	var out []Rule
	for _, r := range rs {
		family := IPv4
		switch r.Family {
		case unix.AF_INET:
		case unix.AF_INET6:
			family = IPv6
		default:
			continue // multicast routing's rules and the like
		}
		if r.Table > 0 && r.Src == nil && r.Dst == nil && r.Mark == 0 && r.IifName == "" && r.OifName == "" {
			out = append(out, Rule{Priority: r.Priority, Table: r.Table, Family: family})
		}
	}
	return out, nil
}

func nlRule(r Rule) *netlink.Rule {
	nr := netlink.NewRule()
	nr.Family = netlink.FAMILY_V4
	if r.Family.Or4() == IPv6 {
		nr.Family = netlink.FAMILY_V6
	}
	nr.Priority = r.Priority
	nr.Table = r.Table
	return nr
}

func (l *Linux) AddRule(_ context.Context, r Rule) error { return l.nl.RuleAdd(nlRule(r)) }

func (l *Linux) DeleteRule(_ context.Context, r Rule) error {
	return ignore(l.nl.RuleDel(nlRule(r)), unix.ENOENT)
}

func (l *Linux) sysctlPath(key string) (string, error) {
	p := filepath.Join(l.procSys, filepath.Clean("/"+key))
	if !strings.HasPrefix(key, "net/") {
		return "", fmt.Errorf("sysctl %s: only net/ keys", key)
	}
	return p, nil
}

func (l *Linux) Sysctl(_ context.Context, key string) (string, error) {
	p, err := l.sysctlPath(key)
	if err != nil {
		return "", err
	}
	var v []byte
	err = l.inNS(func() error {
		var err error
		v, err = os.ReadFile(p)
		return err
	})
	return strings.TrimSpace(string(v)), err
}

func (l *Linux) SetSysctl(_ context.Context, key, value string) error {
	p, err := l.sysctlPath(key)
	if err != nil {
		return err
	}
	return l.inNS(func() error { return os.WriteFile(p, []byte(value), 0o644) })
}

// ignore turns the listed errnos into success: deleting what is gone is no error.
func ignore(err error, errnos ...unix.Errno) error {
	for _, e := range errnos {
		if errors.Is(err, e) {
			return nil
		}
	}
	return err
}
