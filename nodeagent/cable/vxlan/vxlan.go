package vxlan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/devroute"
	"github.com/straitnet/strait/nodeagent/nldump"
)

const (
	// DeviceName is the cable's VXLAN device.
	DeviceName = "strait-vx0"
	// VNI of the cable.
	VNI = 7301
	// overhead of VXLAN over IPv4: outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14.
	overhead = 50
	// vtepFirstOctet is the first octet of every VTEP address.
	vtepFirstOctet = 243
)

// VTEP6Prefix holds every gateway's IPv6 VTEP address: the prefix and the gateway's
// advertised IPv4 address in the low 32 bits. The device is L2, so IPv6 needs an
// address of its own on it to route remote IPv6 CIDRs via the remote gateway's.
var VTEP6Prefix = netip.MustParsePrefix("fdf3:7301::/96")

// Config is how the driver is built.
type Config struct {
	// Routing is where routes to remote CIDRs go.
	Routing cable.Routing
	// Netlink is the handle to program through; nil means the current network namespace.
	Netlink *netlink.Handle
}

// Driver is the VXLAN cable driver.
type Driver struct {
	cfg Config
	mu  sync.Mutex
	// remotes of the last Converge, by underlay IP, to name clusters in Connections, and
	// local, to report the endpoints and a NAT.
	remotes map[netip.Addr]string
	local   cable.Local
}

var _ cable.Driver = (*Driver)(nil)

// New returns a VXLAN driver.
func New(cfg Config) (*Driver, error) {
	h, err := devroute.Handle(cfg.Netlink)
	if err != nil {
		return nil, err
	}
	cfg.Netlink = h
	return &Driver{cfg: cfg, remotes: map[netip.Addr]string{}}, nil
}

// Name implements cable.Driver.
func (d *Driver) Name() straitv1.CableDriver { return straitv1.CableVXLAN }

// PublicKey implements cable.Driver: VXLAN has no keys.
func (d *Driver) PublicKey() string { return "" }

// VTEP is the VTEP address of the gateway whose underlay address is ip.
func VTEP(ip netip.Addr) (netip.Addr, error) {
	if !ip.Is4() && !ip.Is4In6() {
		return netip.Addr{}, fmt.Errorf("vxlan cable needs an IPv4 gateway address, got %s", ip)
	}
	b := ip.Unmap().As4()
	return netip.AddrFrom4([4]byte{vtepFirstOctet, b[1], b[2], b[3]}), nil
}

// VTEP6 is the IPv6 VTEP address of the gateway whose advertised address is ip.
func VTEP6(ip netip.Addr) (netip.Addr, error) {
	if !ip.Is4() && !ip.Is4In6() {
		return netip.Addr{}, fmt.Errorf("vxlan cable needs an IPv4 gateway address, got %s", ip)
	}
	b := VTEP6Prefix.Addr().As16()
	v4 := ip.Unmap().As4()
	copy(b[12:], v4[:])
	return netip.AddrFrom16(b), nil
}

// MAC is the hardware address of the device of the gateway whose advertised address is
// ip: 0a:f3 (locally administered, unicast) and its four bytes. Derived, so every remote
// writes a permanent neighbor entry for the gateway's IPv6 VTEP without asking (IPv6 has
// no broadcast; neighbor discovery through the all-zero FDB entries would work too, but
// costs a round trip and a DELAY/PROBE cycle after the device is made again).
func MAC(ip netip.Addr) net.HardwareAddr {
	b := ip.Unmap().As4()
	return net.HardwareAddr{0x0a, 0xf3, b[0], b[1], b[2], b[3]}
}

// Converge implements cable.Driver.
func (d *Driver) Converge(_ context.Context, local cable.Local, remotes []cable.Remote) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.cfg.Netlink
	if !local.Advertised.IsValid() {
		return errors.New("vxlan cable needs an address other gateways send to: it has no NAT traversal, so it cannot run behind masquerade")
	}
	// The VTEP follows the advertised address, not the bound one: the remote derives this
	// end's VTEP from the address it sends to, and behind a 1:1 NAT that is not ours.
	vtep, err := VTEP(local.Advertised)
	if err != nil {
		return err
	}
	vtep6, _ := VTEP6(local.Advertised)
	if !local.IP.Unmap().Is4() {
		return fmt.Errorf("vxlan cable needs an IPv4 underlay, got %s", local.IP)
	}
	mtu, err := devroute.UnderlayMTU(h, local.IP.Unmap())
	if err != nil {
		return err
	}
	link, err := d.ensureDevice(local, mtu-overhead)
	if err != nil {
		return err
	}
	addrs := []*netlink.Addr{
		{IPNet: &net.IPNet{IP: net.IP(vtep.AsSlice()), Mask: net.CIDRMask(8, 32)}},
		// No duplicate address detection: the address is derived from one only this
		// gateway advertises, and DAD would hold it tentative (unusable) for a second.
		{IPNet: &net.IPNet{IP: net.IP(vtep6.AsSlice()), Mask: net.CIDRMask(VTEP6Prefix.Bits(), 128)}, Flags: unix.IFA_F_NODAD},
	}
	for _, a := range addrs {
		if err := h.AddrReplace(link, a); err != nil {
			return fmt.Errorf("address %s on %s: %w", a.IPNet, DeviceName, err)
		}
	}
	if err := d.removeOtherAddrs(link, vtep, vtep6); err != nil {
		return err
	}
	if link.Attrs().Flags&net.FlagUp == 0 {
		if err := h.LinkSetUp(link); err != nil {
			return fmt.Errorf("set %s up: %w", DeviceName, err)
		}
	}

	var errs []error
	src4, err := devroute.OwnedSource(h, local.HealthCheckIP)
	if err != nil {
		errs = append(errs, err)
	}
	src6, err := devroute.OwnedSource(h, local.HealthCheckIPv6)
	if err != nil {
		errs = append(errs, err)
	}
	wantFDB := map[netip.Addr]bool{}
	wantNeigh := map[netip.Addr]net.HardwareAddr{}
	var routes []devroute.Route
	d.remotes = map[netip.Addr]string{}
	for _, r := range remotes {
		if !r.IP.IsValid() {
			errs = append(errs, fmt.Errorf("remote %s: vxlan cable needs the remote gateway's address (it has no NAT traversal)", r.ClusterID))
			continue
		}
		rv, err := VTEP(r.IP)
		if err != nil {
			errs = append(errs, fmt.Errorf("remote %s: %w", r.ClusterID, err))
			continue
		}
		rv6, _ := VTEP6(r.IP)
		wantFDB[r.IP.Unmap()] = true
		d.remotes[r.IP.Unmap()] = r.ClusterID
		for _, c := range r.CIDRs {
			if c.Addr().Is4() {
				routes = append(routes, devroute.Route{Dst: c.Masked(), Gw: rv, Src: src4})
				continue
			}
			routes = append(routes, devroute.Route{Dst: c.Masked(), Gw: rv6, Src: src6})
			wantNeigh[rv6] = MAC(r.IP)
		}
	}
	d.local = local
	if err := d.syncFDB(link, wantFDB); err != nil {
		errs = append(errs, err)
	}
	if err := d.syncNeighbors(link, wantNeigh); err != nil {
		errs = append(errs, err)
	}
	if err := devroute.Sync(h, link, d.cfg.Routing, routes); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ensureDevice returns the cable device, creating it, or recreating it when its VXLAN
// parameters differ from what local needs (they cannot be changed in place).
func (d *Driver) ensureDevice(local cable.Local, mtu int) (netlink.Link, error) {
	h := d.cfg.Netlink
	mac := MAC(local.Advertised)
	want := &netlink.Vxlan{
		LinkAttrs: netlink.LinkAttrs{Name: DeviceName, MTU: mtu, HardwareAddr: mac},
		VxlanId:   VNI,
		SrcAddr:   net.IP(local.IP.Unmap().AsSlice()),
		Port:      int(local.Port),
		Learning:  false,
	}
	link, err := h.LinkByName(DeviceName)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
	case err != nil:
		return nil, fmt.Errorf("look up %s: %w", DeviceName, err)
	default:
		if have, ok := link.(*netlink.Vxlan); ok && have.VxlanId == want.VxlanId && have.Port == want.Port &&
			have.SrcAddr.Equal(want.SrcAddr) && !have.Learning {
			if have.MTU != mtu {
				if err := h.LinkSetMTU(link, mtu); err != nil {
					return nil, fmt.Errorf("set MTU of %s: %w", DeviceName, err)
				}
			}
			// A device of an earlier version has a random address; the remotes' neighbor
			// entries name the derived one.
			if !slices.Equal(have.HardwareAddr, mac) {
				if err := h.LinkSetHardwareAddr(link, mac); err != nil {
					return nil, fmt.Errorf("set hardware address of %s: %w", DeviceName, err)
				}
			}
			return link, nil
		}
		if err := h.LinkDel(link); err != nil {
			return nil, fmt.Errorf("replace %s: %w", DeviceName, err)
		}
	}
	if err := h.LinkAdd(want); err != nil {
		return nil, fmt.Errorf("create %s: %w", DeviceName, err)
	}
	link, err = h.LinkByName(DeviceName)
	if err != nil {
		return nil, fmt.Errorf("look up %s: %w", DeviceName, err)
	}
	return link, nil
}

// removeOtherAddrs removes every address but keep from the device, except IPv6
// link-local ones (the kernel's).
func (d *Driver) removeOtherAddrs(link netlink.Link, keep ...netip.Addr) error {
	addrs, err := nldump.Retry(func() ([]netlink.Addr, error) { return d.cfg.Netlink.AddrList(link, netlink.FAMILY_ALL) })
	if err != nil {
		return fmt.Errorf("addresses of %s: %w", DeviceName, err)
	}
	var errs []error
	for _, a := range addrs {
		if aa, ok := netip.AddrFromSlice(a.IP); ok && (slices.Contains(keep, aa.Unmap()) || aa.IsLinkLocalUnicast()) {
			continue
		}
		if err := d.cfg.Netlink.AddrDel(link, &a); err != nil {
			errs = append(errs, fmt.Errorf("remove %s from %s: %w", a.IPNet, DeviceName, err))
		}
	}
	return errors.Join(errs...)
}

func (d *Driver) fdb(link netlink.Link) ([]netlink.Neigh, error) {
	all, err := nldump.Retry(func() ([]netlink.Neigh, error) { return d.cfg.Netlink.NeighList(link.Attrs().Index, unix.AF_BRIDGE) })
	if err != nil {
		return nil, fmt.Errorf("FDB of %s: %w", DeviceName, err)
	}
	zero := net.HardwareAddr{0, 0, 0, 0, 0, 0}
	var out []netlink.Neigh
	for _, n := range all {
		if n.IP != nil && slices.Equal(n.HardwareAddr, zero) {
			out = append(out, n)
		}
	}
	return out, nil
}

func (d *Driver) syncFDB(link netlink.Link, want map[netip.Addr]bool) error {
	have, err := d.fdb(link)
	if err != nil {
		return err
	}
	present := map[netip.Addr]bool{}
	var errs []error
	for _, n := range have {
		ip, _ := netip.AddrFromSlice(n.IP)
		ip = ip.Unmap()
		if want[ip] {
			present[ip] = true
			continue
		}
		if err := d.cfg.Netlink.NeighDel(fdbEntry(link, ip)); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("remove FDB entry for %s: %w", ip, err))
		}
	}
	for ip := range want {
		if present[ip] {
			continue
		}
		if err := d.cfg.Netlink.NeighAppend(fdbEntry(link, ip)); err != nil {
			errs = append(errs, fmt.Errorf("FDB entry for %s: %w", ip, err))
		}
	}
	return errors.Join(errs...)
}

// syncNeighbors makes the device's permanent IPv6 neighbor entries exactly want: each
// remote's IPv6 VTEP at its derived MAC.
func (d *Driver) syncNeighbors(link netlink.Link, want map[netip.Addr]net.HardwareAddr) error {
	h := d.cfg.Netlink
	all, err := nldump.Retry(func() ([]netlink.Neigh, error) { return h.NeighList(link.Attrs().Index, netlink.FAMILY_V6) })
	if err != nil {
		return fmt.Errorf("neighbors of %s: %w", DeviceName, err)
	}
	var errs []error
	for _, n := range all {
		ip, _ := netip.AddrFromSlice(n.IP)
		if n.State&netlink.NUD_PERMANENT == 0 {
			continue
		}
		if mac, ok := want[ip]; ok && slices.Equal(mac, n.HardwareAddr) {
			delete(want, ip)
			continue
		}
		if err := h.NeighDel(&n); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("remove neighbor %s: %w", ip, err))
		}
	}
	for ip, mac := range want {
		n := &netlink.Neigh{LinkIndex: link.Attrs().Index, Family: netlink.FAMILY_V6, State: netlink.NUD_PERMANENT,
			IP: net.IP(ip.AsSlice()), HardwareAddr: mac}
		if err := h.NeighSet(n); err != nil {
			errs = append(errs, fmt.Errorf("neighbor %s at %s: %w", ip, mac, err))
		}
	}
	return errors.Join(errs...)
}

func fdbEntry(link netlink.Link, remote netip.Addr) *netlink.Neigh {
	return &netlink.Neigh{
		LinkIndex:    link.Attrs().Index,
		Family:       unix.AF_BRIDGE,
		Flags:        netlink.NTF_SELF,
		State:        netlink.NUD_PERMANENT,
		HardwareAddr: net.HardwareAddr{0, 0, 0, 0, 0, 0},
		IP:           net.IP(remote.AsSlice()),
	}
}

// Connections implements cable.Driver. VXLAN has no handshake: a remote counts as
// connected while its FDB entry is in place and the device is up; liveness is the health
// checker's business. Byte counters are per device, not per remote, so they stay zero.
func (d *Driver) Connections(_ context.Context) ([]cable.Connection, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	link, err := d.cfg.Netlink.LinkByName(DeviceName)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up %s: %w", DeviceName, err)
	}
	entries, err := d.fdb(link)
	if err != nil {
		return nil, err
	}
	up := link.Attrs().Flags&net.FlagUp != 0
	var out []cable.Connection
	for _, n := range entries {
		ip, _ := netip.AddrFromSlice(n.IP)
		// Every gateway listens on the clusterset's one cable port. VXLAN learns nothing
		// from what arrives: the only NAT it can know of is its own 1:1 one.
		out = append(out, cable.Connection{ClusterID: d.remotes[ip.Unmap()], Connected: up,
			Endpoint: netip.AddrPortFrom(ip.Unmap(), uint16(d.local.Port)), NATDetected: d.local.IP != d.local.Advertised})
	}
	return cable.ByCluster(out), nil
}

// Cleanup implements cable.Driver: deleting the device takes its address, FDB entries and
// routes with it.
func (d *Driver) Cleanup(_ context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.remotes = map[netip.Addr]string{}
	link, err := d.cfg.Netlink.LinkByName(DeviceName)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up %s: %w", DeviceName, err)
	}
	if err := d.cfg.Netlink.LinkDel(link); err != nil {
		return fmt.Errorf("delete %s: %w", DeviceName, err)
	}
	return nil
}

// Overhead is what the cable adds to every packet; the gateway lowers the MTU of routes
// towards it by that much.
func (d *Driver) Overhead() int { return overhead }
