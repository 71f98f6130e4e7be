package topology

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Where a walk ends besides a namespace.
const (
	hostNS   = "(host)"
	outside  = "(out through the host's default route)"
	noRoute  = "(no route)"
	maxSteps = 12
)

// fabric is the lab's IPv4 forwarding as its routes, addresses and links say, so a packet
// can be walked namespace by namespace without a kernel.
type fabric struct {
	owner     map[netip.Addr]string
	connected map[string][]netip.Prefix
	routes    map[string][]Route
	// podCIDR is where a node delivers to its own pods; service is where a member's
	// kube-proxy takes a ClusterIP (any of its nodes).
	podCIDR map[string]netip.Prefix
	service map[string]netip.Prefix
}

func newFabric(l *Lab) *fabric {
	f := &fabric{owner: map[netip.Addr]string{}, connected: map[string][]netip.Prefix{}, routes: map[string][]Route{},
		podCIDR: map[string]netip.Prefix{}, service: map[string]netip.Prefix{}}
	addr := func(ns string, p netip.Prefix) {
		f.owner[p.Addr()] = ns
		f.connected[ns] = append(f.connected[ns], p.Masked())
	}
	links := slices.Clone(l.Links)
	for _, c := range l.Clusters {
		links = append(links, c.Links...)
		f.routes[c.Router.Namespace] = c.Router.Routes
		f.routes[c.ControlPlane.Namespace] = c.ControlPlane.Routes
		for _, n := range c.Nodes {
			f.routes[n.Namespace] = n.Routes
			f.podCIDR[n.Namespace] = n.PodCIDR
			f.service[n.Namespace] = c.ServiceCIDR
		}
	}
	for _, k := range links {
		if k.Addr.IsValid() {
			addr(k.Namespace, k.Addr)
		}
	}
	if l.Hub != nil {
		addr(l.Hub.Namespace, l.Hub.LANAddr)
		f.routes[l.Hub.Namespace] = l.Hub.Routes
	}
	in, hl := l.Internet, l.HostLink
	addr(in.Namespace, netip.PrefixFrom(in.Addr, 32))
	f.routes[in.Namespace] = in.Routes
	addr(hostNS, hl.Addr)
	addr(hl.PeerNamespace, hl.PeerAddr)
	for _, p := range hl.Routes {
		f.routes[hostNS] = append(f.routes[hostNS], Route{Dst: p, Via: hl.PeerAddr.Addr()})
	}
	// The host's own default route leads out of the machine.
	f.routes[hostNS] = append(f.routes[hostNS], Route{Dst: defaultRoute, Via: netip.MustParseAddr("192.0.2.1")})
	return f
}

// walk forwards a packet for dst from ns and returns the namespaces it went through, the
// last one where it was delivered, or outside or noRoute.
func (f *fabric) walk(ns string, dst netip.Addr) []string {
	path := []string{ns}
	for range maxSteps {
		if f.owner[dst] == ns || f.podCIDR[ns].Contains(dst) || f.service[ns].Contains(dst) {
			return path
		}
		best, next := -1, ""
		for _, p := range f.connected[ns] {
			if p.Contains(dst) && p.Bits() > best {
				best, next = p.Bits(), f.owner[dst]
			}
		}
		for _, r := range f.routes[ns] {
			if r.Dst.Contains(dst) && r.Dst.Bits() > best {
				best, next = r.Dst.Bits(), f.owner[r.Via]
				if ns == hostNS && r.Dst.Bits() == 0 {
					next = outside
				}
			}
		}
		switch {
		case best < 0:
			return append(path, noRoute)
		case next == "":
			return append(path, noRoute+" (no neighbour)")
		case next == outside:
			return append(path, outside)
		}
		ns = next
		path = append(path, ns)
	}
	return append(path, "(loop)")
}

func TestWayOut(t *testing.T) {
	for _, tc := range []struct {
		example string
		spec    Spec
		// hostRoutes is exactly what the host routes into the lab.
		hostRoutes string
	}{
		{"basic", DefaultSpec(""), "10.8.0.0/16 10.9.0.0/16 10.88.0.0/16 10.99.0.0/16 10.250.0.0/16 198.18.0.0/24 198.18.1.0/24"},
		{"globalnet", Spec{Hub: true, Gateways: 1, Workers: 1}, "10.7.0.0/16 10.77.0.0/16 10.250.0.0/16 198.18.0.0/24 198.18.1.0/24 242.0.0.0/8"},
		{"three-clusters", Spec{Gateways: 1}, "10.10.0.0/16 10.20.0.0/16 10.30.0.0/16 10.110.0.0/16 10.120.0.0/16 10.130.0.0/16 10.250.0.0/16 198.18.0.0/24 198.18.1.0/24 242.0.0.0/8"},
	} {
		t.Run(tc.example, func(t *testing.T) {
			cs := loadExample(t, tc.example)
			l, errs := Compute(cs, tc.spec)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			hl := l.HostLink
			var got []string
			for _, p := range hl.Routes {
				got = append(got, p.String())
			}
			if strings.Join(got, " ") != tc.hostRoutes {
				t.Errorf("host routes\n got %s\nwant %s", strings.Join(got, " "), tc.hostRoutes)
			}
			for _, p := range hl.Routes {
				for _, h := range thisMachine {
					if p.Overlaps(h.Prefix) && h.Prefix.Bits() > 0 {
						t.Errorf("host route %s takes the host's %s", p, h.What)
					}
				}
			}
			f := newFabric(l)
			// Every address of the lab: from the host into the lab only, and back.
			shared := sharedRanges(l.Clusters)
			for _, target := range labAddresses(l, cs) {
				path := f.walk(hostNS, target.addr)
				if len(path) < 2 || path[1] != l.Internet.Namespace {
					t.Errorf("host → %s (%s): %v, want through the host's link to %s", target.addr, target.what, path, l.Internet.Namespace)
					continue
				}
				if target.shared || shared[target.of] {
					// Two members hold it: the host routes it into the lab, where the
					// internet has no way to either without NAT.
					if last := path[len(path)-1]; last != noRoute {
						t.Errorf("host → shared %s (%s): %v, want no route in the lab", target.addr, target.what, path)
					}
					continue
				}
				if last := path[len(path)-1]; last != target.ns {
					t.Errorf("host → %s (%s): %v, want it delivered in %s", target.addr, target.what, path, target.ns)
					continue
				}
				if back := f.walk(target.ns, hl.Addr.Addr()); back[len(back)-1] != hostNS {
					t.Errorf("%s → host %s: %v", target.ns, hl.Addr.Addr(), back)
				}
			}
			for _, c := range l.Clusters {
				// Nodes and control planes reach the internet through their own router
				// (gateways too: only cables use their WAN link), and the answers come back.
				froms := []struct{ ns, src string }{{c.ControlPlane.Namespace, c.ControlPlane.LANAddr.Addr().String()}}
				for _, n := range c.Nodes {
					froms = append(froms, struct{ ns, src string }{n.Namespace, n.LANAddr.Addr().String()},
						struct{ ns, src string }{n.Namespace, n.PodGateway.Next().String()}) // a pod there
				}
				for _, from := range froms {
					path := f.walk(from.ns, l.Internet.Addr)
					want := []string{from.ns, c.Router.Namespace, l.Internet.Namespace}
					if !slices.Equal(path, want) {
						t.Errorf("%s → internet %s: %v, want %v", from.ns, l.Internet.Addr, path, want)
					}
					src := netip.MustParseAddr(from.src)
					back := f.walk(l.Internet.Namespace, src)
					if shared[c.PodCIDR] && c.PodCIDR.Contains(src) {
						if back[len(back)-1] != noRoute {
							t.Errorf("internet → %s of %s, a pod CIDR two members share: %v, want no route", src, c.Name, back)
						}
						continue
					}
					if want := []string{l.Internet.Namespace, c.Router.Namespace, from.ns}; !slices.Equal(back, want) {
						t.Errorf("internet → %s: %v, want %v", src, back, want)
					}
				}
				// Cables stay on the WAN: a gateway reaches every other gateway directly.
				for _, n := range c.Nodes {
					for _, o := range l.Clusters {
						for _, m := range o.Nodes {
							if n.Gateway && m.Gateway && n.Name != m.Name {
								if path := f.walk(n.Namespace, m.WANAddr.Addr()); !slices.Equal(path, []string{n.Namespace, m.Namespace}) {
									t.Errorf("gateway %s → gateway %s on the WAN: %v", n.Name, m.Name, path)
								}
							}
						}
					}
				}
			}
			// The internet's address is no one else's range.
			for _, p := range append([]netip.Prefix{l.LANRange, l.WANSubnet}, hl.Routes...) {
				if p != l.InternetRange && p.Contains(l.Internet.Addr) {
					t.Errorf("internet address %s inside %s", l.Internet.Addr, p)
				}
			}
		})
	}
}

type labAddress struct {
	addr netip.Addr
	what string
	ns   string
	// of is the member range it is in; shared says two members hold it (globalnet).
	of     netip.Prefix
	shared bool
}

// labAddresses is one address of every kind the lab has, and where it lives.
func labAddresses(l *Lab, cs *straitv1.ClusterSet) []labAddress {
	out := []labAddress{{addr: l.Internet.Addr, what: "the internet", ns: l.Internet.Namespace}}
	if l.Hub != nil {
		out = append(out, labAddress{addr: l.Hub.LANAddr.Addr(), what: "the hub's API server", ns: l.Hub.Namespace})
	}
	for _, c := range l.Clusters {
		out = append(out,
			labAddress{addr: c.ControlPlane.LANAddr.Addr(), what: c.Name + "'s API server", ns: c.ControlPlane.Namespace},
			labAddress{addr: c.Router.LANAddr.Addr(), what: c.Name + "'s router on the LAN", ns: c.Router.Namespace},
			labAddress{addr: c.Router.WANAddr.Addr(), what: c.Name + "'s router on the WAN", ns: c.Router.Namespace},
			labAddress{addr: c.DNSServiceIP, what: c.Name + "'s cluster DNS ClusterIP", ns: c.Nodes[0].Namespace, of: c.ServiceCIDR})
		for _, n := range c.Nodes {
			out = append(out,
				labAddress{addr: n.LANAddr.Addr(), what: n.Name, ns: n.Namespace},
				labAddress{addr: n.PodGateway.Next(), what: "a pod on " + n.Name, ns: n.Namespace, of: c.PodCIDR})
			if n.Gateway {
				out = append(out, labAddress{addr: n.WANAddr.Addr(), what: n.Name + " on the WAN", ns: n.Namespace})
			}
		}
	}
	if r, ok := globalRange(cs); ok {
		p := netip.MustParsePrefix(r)
		out = append(out, labAddress{addr: p.Addr().Next(), what: "a global IP in " + r, shared: true})
	}
	return out
}

// TestInternetFence: the internet forwards to the members' pod and service CIDRs only
// from the host's link, so traffic between clusters that misses Strait is dropped; a
// range two members share (globalnet) is not routed there at all, so not fenced either.
func TestInternetFence(t *testing.T) {
	for _, tc := range []struct {
		example string
		spec    Spec
		want    string
	}{
		{"basic", DefaultSpec(""), `add table inet lab-internet
delete table inet lab-internet
table inet lab-internet {
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname != "sl-host" ip daddr { 10.8.0.0/16, 10.88.0.0/16, 10.9.0.0/16, 10.99.0.0/16 } drop
	}
}
`},
		{"basic", Spec{Hub: true, Gateways: 1, Workers: 1, IPFamilies: []string{IPv4, IPv6}}, `add table inet lab-internet
delete table inet lab-internet
table inet lab-internet {
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname != "sl-host" ip daddr { 10.8.0.0/16, 10.88.0.0/16, 10.9.0.0/16, 10.99.0.0/16 } drop
		iifname != "sl-host" ip6 daddr { fd10:1ab:0:8000::/56, fd10:1ab:0:100::/112, fd10:1ab:0:8100::/56, fd10:1ab:0:101::/112 } drop
	}
}
`},
		{"globalnet", Spec{Hub: true, Gateways: 1, Workers: 1}, ""},
	} {
		t.Run(tc.example+strings.Join(tc.spec.IPFamilies, ""), func(t *testing.T) {
			l, errs := Compute(loadExample(t, tc.example), tc.spec)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if got := l.Internet.FenceRuleset(); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
			for _, p := range l.Internet.Fenced {
				if !slices.ContainsFunc(l.Internet.Routes, func(r Route) bool { return r.Dst == p }) {
					t.Errorf("%s fenced but not routed by the internet", p)
				}
			}
		})
	}
}
