package wireguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/devroute"
)

const (
	// DeviceName is the cable's WireGuard device.
	DeviceName = "strait-wg"
	// keepalive keeps the path (and NAT bindings) warm and the handshake fresh, so
	// Connections tells a live peer from a dead one.
	keepalive = 10 * time.Second
	// rejectAfter is WireGuard's REJECT_AFTER_TIME: a session older than that is dead.
	rejectAfter = 180 * time.Second
	// leftGrace is how long after the hub moved a peer away from an endpoint a handshake
	// from there still counts as the old gateway's last one (it stops within its renew
	// deadline, under a second).
	leftGrace = 5 * time.Second
)

// overheads of WireGuard by underlay family: outer IPv4 20 or IPv6 40, UDP 8, WireGuard
// header 16 and tag 16 (wg-quick's 80 is the IPv6 figure, taken whatever the family).
var overheads = cable.Overheads{IPv4: 60, IPv6: 80}

// Config is how the driver is built.
type Config struct {
	// PrivateKey of the cluster (see LoadOrCreateKey). Without one the driver can only
	// report and clean up (e.g. for `straitd agent --cleanup` without API access).
	PrivateKey wgtypes.Key
	// Routing is where routes to remote CIDRs go.
	Routing cable.Routing
	// Netlink is the handle to program through; nil means the current network namespace.
	// The device itself is always made in the process's namespace.
	Netlink *netlink.Handle
	// Userspace makes the driver use embedded wireguard-go even where the kernel has
	// WireGuard.
	Userspace bool
	// Logf receives wireguard-go's errors and the messages that explain a cable that does
	// not come up; nil drops them.
	Logf func(format string, args ...any)
	// Debugf receives wireguard-go's other messages (a line per handshake and keepalive);
	// nil drops them.
	Debugf func(format string, args ...any)
	// Now is the clock for handshake ages; nil means time.Now.
	Now func() time.Time
}

// Driver is the WireGuard cable driver.
type Driver struct {
	cfg Config
	wg  *wgctrl.Client

	mu        sync.Mutex
	userspace *userspaceDevice
	// remotes of the last Converge by public key, to name clusters in Connections.
	remotes map[wgtypes.Key]string
	// advertised is each remote as its Peer gives it and local this gateway, both from
	// the last Converge, to tell a NAT in Connections.
	advertised map[wgtypes.Key]cable.Remote
	local      cable.Local
	// configured is the endpoint this driver last set for each peer (from its Peer
	// object) and when, to tell a stale Peer from one the hub has updated.
	configured map[wgtypes.Key]configuredEndpoint
}

type configuredEndpoint struct {
	addr string
	at   time.Time
	// left are endpoints the Peer named before and then moved away from: a gateway that
	// has handed over may still send a last authenticated packet (same cluster key), and
	// WireGuard roams back to it; that is not a roam to keep, unless it comes later than
	// leftGrace (the remote cluster failed back to that gateway).
	left []string
}

var _ cable.Driver = (*Driver)(nil)

// New returns a WireGuard driver. Close it (or Cleanup it) to stop an embedded device.
func New(cfg Config) (*Driver, error) {
	h, err := devroute.Handle(cfg.Netlink)
	if err != nil {
		return nil, err
	}
	cfg.Netlink = h
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Debugf == nil {
		cfg.Debugf = func(string, ...any) {}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	wg, err := wgctrl.New()
	if err != nil {
		return nil, fmt.Errorf("wgctrl: %w", err)
	}
	return &Driver{cfg: cfg, wg: wg, remotes: map[wgtypes.Key]string{}, advertised: map[wgtypes.Key]cable.Remote{},
		configured: map[wgtypes.Key]configuredEndpoint{}}, nil
}

// Name implements cable.Driver.
func (d *Driver) Name() straitv1.CableDriver { return straitv1.CableWireGuard }

// PublicKey implements cable.Driver; "" without a private key.
func (d *Driver) PublicKey() string {
	if d.cfg.PrivateKey == (wgtypes.Key{}) {
		return ""
	}
	return d.cfg.PrivateKey.PublicKey().String()
}

// Converge implements cable.Driver.
func (d *Driver) Converge(_ context.Context, local cable.Local, remotes []cable.Remote) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cfg.PrivateKey == (wgtypes.Key{}) {
		return errors.New("wireguard cable has no private key (no access to the member's key Secret?)")
	}
	mtu, err := devroute.UnderlayMTU(d.cfg.Netlink, local.IP.Unmap())
	if err != nil {
		return err
	}
	link, err := d.ensureDevice(mtu - overheads.For(local.IP))
	if err != nil {
		return err
	}

	var errs []error
	src4, err := devroute.OwnedSource(d.cfg.Netlink, local.HealthCheckIP)
	if err != nil {
		errs = append(errs, err)
	}
	src6, err := devroute.OwnedSource(d.cfg.Netlink, local.HealthCheckIPv6)
	if err != nil {
		errs = append(errs, err)
	}
	peers := map[wgtypes.Key]wgtypes.PeerConfig{}
	var routes []devroute.Route
	d.remotes = map[wgtypes.Key]string{}
	d.advertised = map[wgtypes.Key]cable.Remote{}
	for _, r := range remotes {
		key, err := wgtypes.ParseKey(r.PublicKey)
		if err != nil {
			errs = append(errs, fmt.Errorf("remote %s: public key: %w", r.ClusterID, err))
			continue
		}
		ka := keepalive
		pc := wgtypes.PeerConfig{
			PublicKey:                   key,
			PersistentKeepaliveInterval: &ka,
			ReplaceAllowedIPs:           true,
		}
		// A remote behind masquerade has no endpoint to set: WireGuard takes it from the
		// remote's first authenticated packet (its NAT's address and port) and follows it.
		if r.IP.IsValid() {
			pc.Endpoint = &net.UDPAddr{IP: net.IP(r.IP.Unmap().AsSlice()), Port: int(r.Port)}
		}
		for _, c := range r.CIDRs {
			pc.AllowedIPs = append(pc.AllowedIPs, net.IPNet{IP: net.IP(c.Masked().Addr().AsSlice()), Mask: net.CIDRMask(c.Bits(), c.Addr().BitLen())})
			routes = append(routes, devroute.Route{Dst: c.Masked(), Src: devroute.SourceFor(c, src4, src6)})
		}
		peers[key] = pc
		d.remotes[key] = r.ClusterID
		d.advertised[key] = r
	}
	d.local = local
	// Up before the peers are configured: WireGuard sends a peer given a persistent
	// keepalive a keepalive at once only on a running device. That first packet is how
	// a gateway that has just taken over reaches the remote gateways: its handshake
	// moves their peer's endpoint to this node (the cluster's key is the same), where
	// they would otherwise keep sending to the old gateway until the hub's Peer names
	// the new one (a second or two, more under load) or a keepalive interval passed.
	if link.Attrs().Flags&net.FlagUp == 0 {
		if err := d.cfg.Netlink.LinkSetUp(link); err != nil {
			errs = append(errs, fmt.Errorf("set %s up: %w", DeviceName, err))
		}
	}
	if err := d.configure(local, peers); err != nil {
		errs = append(errs, err)
	}
	if err := devroute.Sync(d.cfg.Netlink, link, d.cfg.Routing, routes); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ensureDevice returns strait-wg: the kernel link when there is one or the kernel can make
// one, else the embedded device, started when this Driver has none yet.
func (d *Driver) ensureDevice(mtu int) (netlink.Link, error) {
	h := d.cfg.Netlink
	link, err := h.LinkByName(DeviceName)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		if err := d.createDevice(mtu); err != nil {
			return nil, err
		}
		if link, err = h.LinkByName(DeviceName); err != nil {
			return nil, fmt.Errorf("look up %s: %w", DeviceName, err)
		}
	case err != nil:
		return nil, fmt.Errorf("look up %s: %w", DeviceName, err)
	case link.Type() != "wireguard" && d.userspace == nil:
		return nil, fmt.Errorf("%s exists as a %s device this agent did not make (another agent running?)", DeviceName, link.Type())
	}
	if link.Attrs().MTU != mtu {
		if err := h.LinkSetMTU(link, mtu); err != nil {
			return nil, fmt.Errorf("set MTU of %s: %w", DeviceName, err)
		}
	}
	return link, nil
}

func (d *Driver) createDevice(mtu int) error {
	if d.userspace != nil {
		// Our embedded device's TUN vanished under us: start afresh.
		_ = d.userspace.close()
		d.userspace = nil
	}
	if !d.cfg.Userspace {
		err := d.cfg.Netlink.LinkAdd(&netlink.Wireguard{LinkAttrs: netlink.LinkAttrs{Name: DeviceName, MTU: mtu}})
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("create kernel WireGuard device %s: %w", DeviceName, err)
		}
	}
	u, err := startUserspace(DeviceName, mtu, d.cfg.Logf, d.cfg.Debugf)
	if err != nil {
		return err
	}
	d.userspace = u
	return nil
}

// configure sends wgctrl only what differs, so converging again leaves sessions alone.
func (d *Driver) configure(local cable.Local, want map[wgtypes.Key]wgtypes.PeerConfig) error {
	dev, err := d.wg.Device(DeviceName)
	if err != nil {
		return fmt.Errorf("read %s: %w", DeviceName, err)
	}
	var cfg wgtypes.Config
	changed := false
	if dev.PrivateKey != d.cfg.PrivateKey {
		cfg.PrivateKey = &d.cfg.PrivateKey
		changed = true
	}
	if dev.ListenPort != int(local.Port) {
		port := int(local.Port)
		cfg.ListenPort = &port
		changed = true
	}
	have := map[wgtypes.Key]wgtypes.Peer{}
	for _, p := range dev.Peers {
		have[p.PublicKey] = p
		if _, ok := want[p.PublicKey]; !ok {
			cfg.Peers = append(cfg.Peers, wgtypes.PeerConfig{PublicKey: p.PublicKey, Remove: true})
			changed = true
		}
	}
	now := d.cfg.Now()
	for key := range d.configured {
		if _, ok := want[key]; !ok {
			delete(d.configured, key)
		}
	}
	for key, pc := range want {
		p, ok := have[key]
		if pc.Endpoint == nil {
			// Behind masquerade: the endpoint is the device's to learn, not ours to set.
			delete(d.configured, key)
			if ok && samePeer(p, pc) {
				continue
			}
			cfg.Peers = append(cfg.Peers, pc)
			changed = true
			continue
		}
		if ok && d.roamed(p, pc, now) {
			pc.Endpoint = p.Endpoint
		} else {
			if ok && p.Endpoint != nil && p.Endpoint.String() != pc.Endpoint.String() {
				d.cfg.Logf("peer %s: endpoint %s (last handshake %s ago) set to %s, as its Peer says",
					d.remotes[key], p.Endpoint, now.Sub(p.LastHandshakeTime).Round(time.Millisecond), pc.Endpoint)
			}
			if c, known := d.configured[key]; c.addr != pc.Endpoint.String() {
				left := c.left
				if known {
					left = append([]string{c.addr}, left...)[:min(len(left)+1, 4)]
				}
				d.configured[key] = configuredEndpoint{addr: pc.Endpoint.String(), at: now, left: left}
			}
		}
		if ok && samePeer(p, pc) {
			continue
		}
		cfg.Peers = append(cfg.Peers, pc)
		changed = true
	}
	if !changed {
		return nil
	}
	if err := d.wg.ConfigureDevice(DeviceName, cfg); err != nil {
		return fmt.Errorf("configure %s: %w", DeviceName, err)
	}
	return nil
}

// roamed says whether the device should keep the endpoint it has for peer p rather than
// take the one its Peer object gives: WireGuard moves a peer's endpoint to wherever its
// latest authenticated packet came from, so when the remote cluster fails over to
// another gateway (same cluster key) the cable follows before the hub can say so. The
// Peer object then lags behind — for as long as the hub is down — and setting its
// endpoint again at every resync cut the cable until the new gateway's next keepalive
// moved it back (~10 s of every 30 with the hub down). The device's endpoint is kept
// while the Peer still gives the endpoint this driver last set (the hub has said nothing
// newer; after an agent restart, what it says is taken as that), the device has moved
// away from it to an address of the same family, and the session is alive with a
// handshake since the endpoint was set.
func (d *Driver) roamed(p wgtypes.Peer, pc wgtypes.PeerConfig, now time.Time) bool {
	if p.Endpoint == nil || p.Endpoint.String() == pc.Endpoint.String() {
		return false
	}
	if (p.Endpoint.IP.To4() == nil) != (pc.Endpoint.IP.To4() == nil) {
		// A remote cluster's gateways are all reached in the family its Peer gives: a
		// packet from an address of the other family is the path the Peer just moved
		// away from (both ends switching underlay family), not a failover. Kept, it
		// held the cable on the old family for as long as both addresses worked.
		return false
	}
	last, known := d.configured[p.PublicKey]
	if !known {
		last = configuredEndpoint{addr: pc.Endpoint.String()}
	}
	if last.addr != pc.Endpoint.String() {
		return false // the hub has moved the peer since: follow it
	}
	since := last.at
	if slices.Contains(last.left, p.Endpoint.String()) {
		// A gateway the hub moved the peer away from: a last packet it sent while handing
		// over must not pull the cable back, but a handshake well after that is that
		// gateway active again (the remote failed back to it while the hub is down).
		since = since.Add(leftGrace)
	}
	hs := p.LastHandshakeTime
	return !hs.IsZero() && hs.After(since) && now.Sub(hs) < rejectAfter
}

// samePeer says whether the device already has pc; a pc without an endpoint (a remote
// behind masquerade) leaves whatever endpoint the device learnt.
func samePeer(p wgtypes.Peer, pc wgtypes.PeerConfig) bool {
	if pc.Endpoint != nil && (p.Endpoint == nil || !p.Endpoint.IP.Equal(pc.Endpoint.IP) || p.Endpoint.Port != pc.Endpoint.Port) {
		return false
	}
	if p.PersistentKeepaliveInterval != *pc.PersistentKeepaliveInterval {
		return false
	}
	return slices.Equal(ipNetStrings(p.AllowedIPs), ipNetStrings(pc.AllowedIPs))
}

func ipNetStrings(ns []net.IPNet) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, n.String())
	}
	slices.Sort(out)
	return out
}

// Connections implements cable.Driver: a peer is connected while its last handshake is
// younger than WireGuard's REJECT_AFTER_TIME.
func (d *Driver) Connections(_ context.Context) ([]cable.Connection, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dev, err := d.wg.Device(DeviceName)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", DeviceName, err)
	}
	now := d.cfg.Now()
	out := make([]cable.Connection, 0, len(dev.Peers))
	for _, p := range dev.Peers {
		c := cable.Connection{
			ClusterID:     d.remotes[p.PublicKey],
			Connected:     !p.LastHandshakeTime.IsZero() && now.Sub(p.LastHandshakeTime) < rejectAfter,
			LastHandshake: p.LastHandshakeTime,
			RxBytes:       p.ReceiveBytes,
			TxBytes:       p.TransmitBytes,
		}
		if p.Endpoint != nil {
			c.Endpoint = p.Endpoint.AddrPort()
			c.Endpoint = netip.AddrPortFrom(c.Endpoint.Addr().Unmap(), c.Endpoint.Port())
		}
		r := d.advertised[p.PublicKey]
		// A NAT shows as this end not owning what it advertises, or the other end's
		// packets coming from somewhere it did not advertise.
		c.NATDetected = d.local.BehindMasquerade || r.BehindMasquerade || d.local.IP != d.local.Advertised ||
			(c.Endpoint.IsValid() && r.IP.IsValid() && c.Endpoint != netip.AddrPortFrom(r.IP.Unmap(), uint16(r.Port)))
		out = append(out, c)
	}
	return cable.ByCluster(out), nil
}

// Cleanup implements cable.Driver: it stops the embedded device or deletes the kernel
// link; routes through the device go with it.
func (d *Driver) Cleanup(_ context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.remotes = map[wgtypes.Key]string{}
	d.advertised = map[wgtypes.Key]cable.Remote{}
	d.configured = map[wgtypes.Key]configuredEndpoint{}
	var errs []error
	if d.userspace != nil {
		if err := d.userspace.close(); err != nil {
			errs = append(errs, err)
		}
		d.userspace = nil
	}
	link, err := d.cfg.Netlink.LinkByName(DeviceName)
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
	case err != nil:
		errs = append(errs, fmt.Errorf("look up %s: %w", DeviceName, err))
	case link.Type() == "wireguard":
		if err := d.cfg.Netlink.LinkDel(link); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", DeviceName, err))
		}
	}
	return errors.Join(errs...)
}

// Close releases the driver's wgctrl client and stops an embedded device without
// touching a kernel device, as on an agent restart.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	if d.userspace != nil {
		errs = append(errs, d.userspace.close())
		d.userspace = nil
	}
	errs = append(errs, d.wg.Close())
	return errors.Join(errs...)
}

// Overhead is what the cable adds to every packet over either underlay family (the
// larger, IPv6's); the gateway lowers the MTU of routes towards it by that much.
func (d *Driver) Overhead() int { return overheads.Max() }

// Overheads is what the cable adds to every packet by underlay family.
func (d *Driver) Overheads() cable.Overheads { return overheads }
