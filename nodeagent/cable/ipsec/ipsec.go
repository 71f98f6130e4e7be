package ipsec

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strongswan/govici/vici"
	"github.com/vishvananda/netlink"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/devroute"
)

const (
	// LibipsecDevice is the TUN charon's kernel-libipsec plugin makes.
	LibipsecDevice = "ipsec0"
)

// overheads of UDP-encapsulated ESP by underlay family: outer IPv4 20 or IPv6 40, UDP 8,
// ESP header 8, IV up to 16, padding and trailer up to 17, ICV up to 16 (AES-CBC with
// SHA-2; AES-GCM needs less), rounded up as libipsec's TUN MTU (1400 on a 1500 underlay)
// is for IPv4.
var overheads = cable.Overheads{IPv4: 100, IPv6: 120}

// Overhead is what the cable adds to every packet over an IPv4 underlay, as before
// IPv6; the gateway lowers the MTU of routes towards it by that much. Overheads has
// both families' (gateway.UnderlayOverhead).
func (d *Driver) Overhead() int { return overheads.IPv4 }

// Overheads is what the cable adds to every packet by underlay family.
func (d *Driver) Overheads() cable.Overheads { return overheads }

// Config is how the driver is built.
type Config struct {
	// VICISocket is the path of charon's VICI socket (Charon.VICISocket).
	VICISocket string
	// Routing is where routes to remote CIDRs go.
	Routing cable.Routing
	// Netlink is the handle to program through; nil means the current network namespace.
	Netlink *netlink.Handle
	// Now is the clock for SA ages; nil means time.Now.
	Now func() time.Time
}

// Driver is the IPsec cable driver.
type Driver struct {
	cfg Config
	mu  sync.Mutex
	// restarted: Watch saw charon go away and come back. The peer's charon still holds
	// SAs with the one that crashed and would notice only by dead-peer detection, half a
	// minute later; so the next Converge initiates every missing SA from this end, even
	// where the other end is the initiator (its charon replaces the stale IKE SA with the
	// new one, as both use the same identities).
	restarted bool
	// local and wanted are the last Converge's, for the endpoints Connections reports.
	local  cable.Local
	wanted map[string]cable.Remote
}

var _ cable.Driver = (*Driver)(nil)

// New returns an IPsec driver. It connects to charon on every call, so charon may start
// after the driver and restart under it.
func New(cfg Config) (*Driver, error) {
	if cfg.VICISocket == "" {
		return nil, errors.New("ipsec driver needs charon's VICI socket path")
	}
	h, err := devroute.Handle(cfg.Netlink)
	if err != nil {
		return nil, err
	}
	cfg.Netlink = h
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Driver{cfg: cfg}, nil
}

// Name implements cable.Driver.
func (d *Driver) Name() straitv1.CableDriver { return straitv1.CableIPsec }

// PublicKey implements cable.Driver: the IPsec cable authenticates with the PSK.
func (d *Driver) PublicKey() string { return "" }

func (d *Driver) session(ctx context.Context) (*vici.Session, error) {
	s, err := vici.NewSession(vici.WithSocketPath(d.cfg.VICISocket))
	if err != nil {
		return nil, fmt.Errorf("connect to charon at %s: %w", d.cfg.VICISocket, err)
	}
	return s, nil
}

func call(ctx context.Context, s *vici.Session, cmd string, in any) (*vici.Message, error) {
	var msg *vici.Message
	if in != nil {
		var err error
		if msg, err = vici.MarshalMessage(in); err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
	}
	out, err := s.Call(ctx, cmd, msg)
	if err != nil {
		return nil, fmt.Errorf("charon %s: %w", cmd, err)
	}
	return out, nil
}

// Converge implements cable.Driver.
func (d *Driver) Converge(ctx context.Context, local cable.Local, remotes []cable.Remote) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(local.PSK) == 0 {
		return errors.New("ipsec cable needs a PSK")
	}
	s, err := d.session(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()

	// The key is hex on the wire ("0x…"), so any bytes are fine.
	if _, err := call(ctx, s, "load-shared", sharedKey{ID: SharedKeyID, Type: "IKE", Data: "0x" + hex.EncodeToString(local.PSK)}); err != nil {
		return err
	}

	var errs []error
	wanted := map[string]cable.Remote{}
	var routes []devroute.Route
	src4, err := d.localSource(local.HealthCheckIP)
	if err != nil {
		errs = append(errs, err)
	}
	src6, err := d.localSource(local.HealthCheckIPv6)
	if err != nil {
		errs = append(errs, err)
	}
	// libipsec's TUN has one MTU (1400) whatever the underlay; over IPv6 the outer
	// header is 20 bytes longer, which the routes' own MTU takes off.
	mtu := 0
	if under, err := devroute.UnderlayMTU(d.cfg.Netlink, local.IP.Unmap()); err == nil {
		mtu = under - overheads.For(local.IP)
	}
	// Before any child SA can come up, in either role.
	if err := d.syncSelectorAddrs(local.CIDRs); err != nil {
		errs = append(errs, err)
	}
	for _, r := range remotes {
		c, err := connFor(local, r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		name := ConnName(r.ClusterID)
		if _, err := call(ctx, s, "load-conn", map[string]conn{name: c}); err != nil {
			errs = append(errs, fmt.Errorf("remote %s: %w", r.ClusterID, err))
			continue
		}
		wanted[name] = r
		for _, p := range r.CIDRs {
			routes = append(routes, devroute.Route{Dst: p.Masked(), Src: devroute.SourceFor(p, src4, src6), MTU: mtu})
		}
	}

	loaded, err := listConns(ctx, s)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	sas, err := listSAs(ctx, s)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, name := range loaded {
		if _, ok := wanted[name]; ok {
			continue
		}
		if _, err := call(ctx, s, "unload-conn", map[string]string{"name": name}); err != nil {
			errs = append(errs, err)
		}
	}
	for name, list := range sas {
		r, ok := wanted[name]
		for _, sa := range list {
			// An SA to a remote no longer wanted, or between addresses that are no longer
			// the two active gateways', goes; the initiator below brings up a fresh one.
			if ok && current(sa, local, r) {
				continue
			}
			if err := terminate(ctx, s, sa.UniqueID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// The restart is handled once every remote got its initiation; until then (a failed
	// call, a remote not loaded yet) the next Converge initiates again rather than
	// leaving the other end to notice by dead-peer detection.
	failed := len(wanted) < len(remotes)
	for name, r := range wanted {
		// Nobody dials a remote behind masquerade, not even after a restart: it will.
		if !(initiates(local, r) || d.restarted) || !r.IP.IsValid() || hasLiveSA(sas[name], local, r) {
			continue
		}
		// timeout -1: charon initiates in the background; Connections reports the outcome.
		in := map[string]string{"child": name, "ike": name, "timeout": "-1"}
		if _, err := call(ctx, s, "initiate", in); err != nil {
			errs = append(errs, fmt.Errorf("remote %s: %w", r.ClusterID, err))
			failed = true
		}
	}
	if !failed {
		d.restarted = false
	}
	d.local, d.wanted = local, wanted

	if err := d.syncRoutes(routes); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// current says whether sa runs between the two gateways that are active now. A remote
// behind masquerade is wherever its NAT put it.
func current(sa ikeSA, local cable.Local, r cable.Remote) bool {
	remoteOK := !r.IP.IsValid() || sameAddr(sa.RemoteHost, r.IP)
	return remoteOK && sameAddr(sa.LocalHost, local.IP)
}

// sameAddr compares an address as charon prints it with ip: an IPv6 address has more
// than one spelling.
func sameAddr(charon string, ip netip.Addr) bool {
	a, err := netip.ParseAddr(charon)
	return err == nil && a.Unmap() == ip.Unmap()
}

// endpointOf is where sa reaches the remote and whether a NAT sits between: the
// remote is not where it advertised itself (its NAT's address or port), or this
// gateway's own address is not the one it advertises. IKE's own NAT detection cannot
// say it here: the cable forces UDP encapsulation, which charon gets by faking a NAT.
func endpointOf(sa ikeSA, local cable.Local, r cable.Remote) (netip.AddrPort, bool) {
	ip, err := netip.ParseAddr(sa.RemoteHost)
	if err != nil {
		return netip.AddrPort{}, false
	}
	port, _ := strconv.ParseUint(sa.RemotePort, 10, 16)
	ep := netip.AddrPortFrom(ip.Unmap(), uint16(port))
	nat := local.BehindMasquerade || r.BehindMasquerade || local.IP != local.Advertised ||
		ep != netip.AddrPortFrom(r.IP.Unmap(), uint16(r.Port))
	return ep, nat
}

func hasLiveSA(list []ikeSA, local cable.Local, r cable.Remote) bool {
	for _, sa := range list {
		if current(sa, local, r) && (sa.State == "ESTABLISHED" || sa.State == "CONNECTING") {
			return true
		}
	}
	return false
}

func terminate(ctx context.Context, s *vici.Session, uniqueID string) error {
	in := map[string]string{"ike-id": uniqueID, "force": "yes", "timeout": "-1"}
	if _, err := call(ctx, s, "terminate", in); err != nil {
		return fmt.Errorf("IKE SA %s: %w", uniqueID, err)
	}
	return nil
}

// localSource is the source address for traffic the gateway itself sends through the
// tunnel: libipsec only carries packets whose source is inside the local traffic
// selector, so it is the health-check address of the route's family (HealthCheckIP,
// HealthCheckIPv6) — which the gateway must own (charon refuses to install a child SA
// otherwise).
func (d *Driver) localSource(hc netip.Addr) (netip.Addr, error) {
	src, err := devroute.OwnedSource(d.cfg.Netlink, hc)
	if err == nil && hc.IsValid() && !src.IsValid() {
		err = fmt.Errorf("this gateway does not own its health-check address %s, which IPsec needs inside its local CIDRs", hc)
	}
	return src, err
}

// syncRoutes routes remote CIDRs into libipsec's TUN. Without it (kernel ESP) charon's
// XFRM policies catch the traffic and no route through a device is needed.
func (d *Driver) syncRoutes(routes []devroute.Route) error {
	link, err := d.cfg.Netlink.LinkByName(LibipsecDevice)
	var notFound netlink.LinkNotFoundError
	if errors.As(err, &notFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up %s: %w", LibipsecDevice, err)
	}
	return devroute.Sync(d.cfg.Netlink, link, d.cfg.Routing, routes)
}

// listConns names the connections loaded in charon that are ours.
func listConns(ctx context.Context, s *vici.Session) ([]string, error) {
	var out []string
	for m, err := range s.CallStreaming(ctx, "list-conns", "list-conn", nil) {
		if err != nil {
			return nil, fmt.Errorf("charon list-conns: %w", err)
		}
		for _, name := range m.Keys() {
			if _, ok := clusterOf(name); ok {
				out = append(out, name)
			}
		}
	}
	return out, nil
}

// listSAs returns our IKE SAs by connection name.
func listSAs(ctx context.Context, s *vici.Session) (map[string][]ikeSA, error) {
	out := map[string][]ikeSA{}
	for m, err := range s.CallStreaming(ctx, "list-sas", "list-sa", nil) {
		if err != nil {
			return nil, fmt.Errorf("charon list-sas: %w", err)
		}
		for _, name := range m.Keys() {
			if _, ok := clusterOf(name); !ok {
				continue
			}
			sec, ok := m.Get(name).(*vici.Message)
			if !ok {
				continue
			}
			var sa ikeSA
			if err := vici.UnmarshalMessage(sec, &sa); err != nil {
				return nil, fmt.Errorf("charon list-sas: %s: %w", name, err)
			}
			out[name] = append(out[name], sa)
		}
	}
	return out, nil
}

// Connections implements cable.Driver: one entry per loaded connection; connected while
// its IKE SA is established and its child SA installed.
func (d *Driver) Connections(ctx context.Context) ([]cable.Connection, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.session(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = s.Close() }()
	loaded, err := listConns(ctx, s)
	if err != nil {
		return nil, err
	}
	sas, err := listSAs(ctx, s)
	if err != nil {
		return nil, err
	}
	now := d.cfg.Now()
	out := make([]cable.Connection, 0, len(loaded))
	for _, name := range loaded {
		cluster, _ := clusterOf(name)
		c := cable.Connection{ClusterID: cluster}
		for _, sa := range sas[name] {
			if sa.State != "ESTABLISHED" {
				continue
			}
			if secs, err := strconv.Atoi(sa.Established); err == nil {
				c.LastHandshake = now.Add(-time.Duration(secs) * time.Second)
			}
			c.Endpoint, c.NATDetected = endpointOf(sa, d.local, d.wanted[name])
			for _, ch := range sa.ChildSAs {
				if ch.State != "INSTALLED" {
					continue
				}
				c.Connected = true
				in, _ := strconv.ParseInt(ch.BytesIn, 10, 64)
				outb, _ := strconv.ParseInt(ch.BytesOut, 10, 64)
				c.RxBytes += in
				c.TxBytes += outb
			}
		}
		out = append(out, c)
	}
	return cable.ByCluster(out), nil
}

// Cleanup implements cable.Driver: it unloads our connections and key, closes their SAs
// and removes our routes through libipsec's TUN. charon itself is the sidecar's to stop.
func (d *Driver) Cleanup(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	if err := d.syncRoutes(nil); err != nil {
		errs = append(errs, err)
	}
	if err := d.syncSelectorAddrs(nil); err != nil {
		errs = append(errs, err)
	}
	s, err := d.session(ctx)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		// No charon (or a dead one): it holds nothing of ours.
		return errors.Join(errs...)
	}
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	defer func() { _ = s.Close() }()
	loaded, err := listConns(ctx, s)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, name := range loaded {
		if _, err := call(ctx, s, "unload-conn", map[string]string{"name": name}); err != nil {
			errs = append(errs, err)
		}
	}
	sas, err := listSAs(ctx, s)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, list := range sas {
		for _, sa := range list {
			if err := terminate(ctx, s, sa.UniqueID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if _, err := call(ctx, s, "unload-shared", map[string]string{"id": SharedKeyID}); err != nil && !isNotFound(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// isNotFound tells charon's "not found" answer to unload-shared, for an idempotent Cleanup.
func isNotFound(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "not found")
}

// Watch implements cable.Watcher. It keeps a VICI session subscribed to IKE and CHILD
// SA up/down events and calls changed on each, and whenever it connects to a charon
// (the first one, or one restarted after a crash, which has forgotten every connection
// and key Converge loaded). While charon is away it tries again every 200 ms.
func (d *Driver) Watch(ctx context.Context, changed func()) {
	lost := false
	for ctx.Err() == nil {
		if lost {
			// The next charon to answer is a restarted one.
			d.mu.Lock()
			d.restarted = true
			d.mu.Unlock()
		}
		err := d.watchOnce(ctx, changed)
		lost = lost || errors.Is(err, errCharonGone)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

// errCharonGone: the charon Watch followed stopped.
var errCharonGone = errors.New("charon went away")

// watchOnce follows one charon until it goes away (or ctx ends).
func (d *Driver) watchOnce(ctx context.Context, changed func()) error {
	s, err := d.session(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	events := make(chan vici.Event, 16)
	s.NotifyEvents(events)
	if err := s.Subscribe("ike-updown", "child-updown"); err != nil {
		return fmt.Errorf("charon: subscribing to SA events: %w", err)
	}
	changed()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-events:
			if !ok {
				return errCharonGone
			}
			changed()
		}
	}
}
