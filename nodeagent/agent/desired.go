package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/gateway"
	"github.com/straitnet/strait/nodeagent/globalnet"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
)

// Snapshot is everything the node's data plane depends on, read at one moment.
type Snapshot struct {
	NodeName   string
	Membership *straitv1.Membership
	Peers      []straitv1.Peer
	Nodes      []corev1.Node
	// ActiveGateway is the node holding the gateway Lease; "" for none.
	ActiveGateway string
	// Links are the node's current links (for the underlay device, its MTU and the
	// health-check address).
	Links []kernel.Link
	// Ingresses are this cluster's GlobalIngresses (read on the active gateway only).
	Ingresses []straitv1.GlobalIngress
	// Endpoints are the ready endpoint IPs of services, by "namespace/name".
	Endpoints map[string][]netip.Addr
	// Ports are the ports of those services and their endpoints' target ports.
	Ports map[string][]globalnet.Port
	// Sticky are those of the services with ClientIP session affinity.
	Sticky map[string]bool
	// Driver is this node's cable driver; nil on nodes that cannot be gateways.
	Driver cable.Driver
	// Resolved are the addresses the Peers' endpoint hostnames resolved to, by hostname
	// (resolved by the agent on their refresh intervals, outside Compute).
	Resolved map[string]netip.Addr
	// PSK is the cable's pre-shared key (ipsec: the Secret the Membership names), read
	// on gateway-capable nodes only.
	PSK []byte
}

// Desired is the node's whole data plane.
type Desired struct {
	State kernel.State
	// Active: this node is the active gateway and runs the cable to Remotes.
	Active  bool
	Local   cable.Local
	Remotes []cable.Remote
	// Placed: the node could be placed and State is the whole truth (also when empty).
	// When false nothing may be applied: an empty State would remove everything.
	Placed bool
}

// GatewayCapable says whether node may become the gateway under m.
func GatewayCapable(m *straitv1.Membership, node *corev1.Node) bool {
	if m == nil || node == nil {
		return false
	}
	return labels.SelectorFromSet(m.Spec.GatewayNodeSelector).Matches(labels.Set(node.Labels))
}

// Compute is the node's desired data plane. Without a Membership it is empty (so Apply
// removes everything of ours); a node it cannot place (no such Node, no InternalIP, no
// underlay device) is an error and nothing should be applied.
func Compute(s Snapshot) (Desired, error) {
	m := s.Membership
	if m == nil {
		return Desired{Placed: true}, nil
	}
	pl, err := place(s)
	if err != nil {
		return Desired{}, err
	}
	n, errs := readNetwork(m, s.Peers, s.Resolved)

	var gw route.Node
	if g := pl.nodes[s.ActiveGateway]; g != nil {
		gw = route.Node{Name: g.Name, IP: InternalIP(g)}
	}
	active := s.ActiveGateway == s.NodeName && s.Driver != nil
	overhead := 0
	if s.Driver != nil {
		overhead = gateway.Overhead(s.Driver)
	} else if drv := m.Spec.Cable.Driver; drv != "" {
		overhead = gateway.DriverOverhead(drv)
	}
	routes := route.Compute(route.Input{
		Self: route.Node{Name: s.NodeName, IP: pl.selfIP}, Nodes: pl.routed, Gateway: gw,
		Underlay: pl.underlay.Name, UnderlayMTU: pl.underlay.MTU, CableOverhead: overhead, RemoteCIDRs: n.remoteCIDRs,
	})
	d := Desired{Active: active, Placed: true}
	parts := []kernel.State{routes}
	if active {
		var gwParts []kernel.State
		d.Local, gwParts, err = gatewayPlane(s, pl, n, overhead, routes)
		errs = append(errs, err)
		d.Remotes = n.remotes
		parts = append(parts, gwParts...)
	}
	d.State = kernel.Merge(parts...)
	return d, errors.Join(errs...)
}

// placement is where this node sits in its cluster.
type placement struct {
	nodes    map[string]*corev1.Node
	routed   []route.Node // the nodes with an InternalIP
	self     *corev1.Node
	selfIP   netip.Addr
	underlay kernel.Link // the device holding selfIP
}

func place(s Snapshot) (placement, error) {
	pl := placement{nodes: map[string]*corev1.Node{}}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		pl.nodes[n.Name] = n
		if ip := InternalIP(n); ip.IsValid() {
			pl.routed = append(pl.routed, route.Node{Name: n.Name, IP: ip})
		}
	}
	if pl.self = pl.nodes[s.NodeName]; pl.self == nil {
		return placement{}, fmt.Errorf("node %s not found", s.NodeName)
	}
	if pl.selfIP = InternalIP(pl.self); !pl.selfIP.IsValid() {
		return placement{}, fmt.Errorf("node %s has no InternalIP", s.NodeName)
	}
	var ok bool
	if pl.underlay, ok = linkWithAddr(s.Links, pl.selfIP); !ok {
		return placement{}, fmt.Errorf("no device holds node %s's address %s", s.NodeName, pl.selfIP)
	}
	return pl, nil
}

// network is the clusterset as this cluster sees it: its own CIDRs and global CIDR,
// what it routes to the other clusters and the cables to their gateways.
type network struct {
	localCIDRs []netip.Prefix
	// globalnet is nil without globalnet or when its global CIDR does not parse.
	globalnet   *straitv1.MemberGlobalnet
	globalCIDR  netip.Prefix
	remoteCIDRs []netip.Prefix
	remotes     []cable.Remote // sorted by cluster
}

// readNetwork parses the Membership and the Peers. What does not parse is left out and
// reported, so that one bad peer does not take the others down.
func readNetwork(m *straitv1.Membership, peers []straitv1.Peer, resolved map[string]netip.Addr) (network, []error) {
	var n network
	var errs []error
	var err error
	n.localCIDRs, err = prefixes(append(slices.Clone(m.Spec.PodCIDRs), m.Spec.ServiceCIDRs...))
	errs = append(errs, err)
	if gn := m.Spec.Globalnet; gn != nil {
		if n.globalCIDR, err = netip.ParsePrefix(gn.GlobalCIDR); err != nil {
			errs = append(errs, fmt.Errorf("membership globalCIDR: %w", err))
		} else {
			n.globalnet = gn
		}
	}
	peers = slices.Clone(peers)
	slices.SortFunc(peers, func(a, b straitv1.Peer) int { return strings.Compare(a.Spec.ClusterID, b.Spec.ClusterID) })
	for _, p := range peers {
		cidrs, err := prefixes(p.Spec.CIDRs)
		if err != nil {
			errs = append(errs, fmt.Errorf("peer %s: %w", p.Name, err))
		}
		n.remoteCIDRs = append(n.remoteCIDRs, cidrs...)
		// While the clusterset switches cable drivers a peer's gateway may still publish
		// the old one: no cable to it until it runs ours (each driver would misread the
		// other's endpoint: a WireGuard key is no IKE peer).
		if ep := p.Spec.Endpoint; ep != nil && (ep.Driver == "" || ep.Driver == m.Spec.Cable.Driver) {
			ip, err := remoteAddr(ep, resolved)
			if err != nil {
				errs = append(errs, fmt.Errorf("peer %s: %w", p.Name, err))
				continue
			}
			n.remotes = append(n.remotes, cable.Remote{ClusterID: p.Spec.ClusterID, IP: ip, Port: ep.Port,
				PublicKey: ep.PublicKey, CIDRs: cidrs, BehindMasquerade: ep.BehindMasquerade})
		}
	}
	return n, errs
}

// gatewayPlane is what the active gateway adds to the routes every node has: its end of
// the cables, the routes into them, the health-check address and, under globalnet, the
// NAT.
func gatewayPlane(s Snapshot, pl placement, n network, overhead int, routes kernel.State) (cable.Local, []kernel.State, error) {
	m := s.Membership
	hc := healthCheckIPs(m, n.globalCIDR)
	addrs, err := GatewayAddresses(m, pl.self, s.Links)
	local := cable.Local{ClusterID: m.Spec.ClusterID, NodeName: s.NodeName, IP: addrs.Local, Advertised: addrs.Advertised,
		BehindMasquerade: behindMasquerade(m), Port: m.Spec.Cable.Port, CIDRs: n.localCIDRs, HealthCheckIP: hc.v4,
		HealthCheckIPv6: hc.v6, PSK: s.PSK}
	if n.globalnet != nil {
		// IPv4 is translated into the global CIDR; a dual-stack cluster's IPv6 is routed
		// as it is.
		local.CIDRs = []netip.Prefix{n.globalCIDR}
		for _, p := range n.localCIDRs {
			if p.Addr().Is6() {
				local.CIDRs = append(local.CIDRs, p)
			}
		}
	}
	parts := []kernel.State{{Routes: gateway.Routes(s.Driver, n.remotes, route.RouteMTU(pl.underlay.MTU, overhead, true))}}
	if n.globalnet != nil {
		egress, gerr := parseAddrs(n.globalnet.EgressIPs)
		err = errors.Join(err, gerr)
		parts = append(parts, globalnet.Compute(globalnet.Input{LocalCIDRs: n.localCIDRs,
			RemoteGlobalCIDRs: n.remoteCIDRs, EgressIPs: egress, Ingress: ingresses(s.Ingresses, s.Endpoints, s.Ports, s.Sticky)}))
	}
	// The health-check addresses are ours to add, on vx-strait of the active gateway
	// only, so they move with a failover.
	if len(routes.Links) == 1 {
		var own []netip.Prefix
		for _, a := range []netip.Addr{hc.v4, hc.v6} {
			if a.IsValid() {
				own = append(own, netip.PrefixFrom(a, a.BitLen()))
			}
		}
		if len(own) > 0 {
			parts = append(parts, kernel.State{Links: []kernel.Link{{Name: route.VXLANDevice, Addrs: own}}})
		}
	}
	return local, parts, err
}

// healthChecks are the addresses the active gateway answers and sends health checks
// from, one per family the cluster has.
type healthChecks struct{ v4, v6 netip.Addr }

// healthCheckIPs: for IPv4 the last address of the global CIDR under globalnet, else of
// the first IPv4 pod CIDR; for IPv6 the last address of the first IPv6 pod CIDR. The hub
// never hands out the global CIDR's last address; pod IPAM leaves the IPv4 broadcast
// address of a node's range alone, and the cluster CIDR's last address is that of its
// last range. In IPv6 a node's range has no broadcast address, but IPAM hands a /64's
// addresses out from its start (host-local, Calico, Cilium alike): its last of 2^64 is
// never reached. They are the agent's own rather than the CNI bridge's: a gateway with
// no pod on it, or a CNI that puts no address on the node, has none there, and health
// was then never measured.
func healthCheckIPs(m *straitv1.Membership, globalCIDR netip.Prefix) healthChecks {
	var hc healthChecks
	if globalCIDR.IsValid() {
		hc.v4 = kernel.LastAddr(globalCIDR)
	}
	pods, _ := prefixes(m.Spec.PodCIDRs)
	for _, p := range pods {
		switch {
		case p.Addr().Is4() && !hc.v4.IsValid():
			hc.v4 = kernel.LastAddr(p)
		case p.Addr().Is6() && !hc.v6.IsValid():
			hc.v6 = kernel.LastAddr(p)
		}
	}
	return hc
}

// ingresses turns GlobalIngresses into NAT mappings: a headless service's pods map one
// to one; a ClusterSetIP service maps to its ready endpoints, by source when sticky.
func ingresses(gis []straitv1.GlobalIngress, endpoints map[string][]netip.Addr, ports map[string][]globalnet.Port,
	sticky map[string]bool) []globalnet.Ingress {
	var out []globalnet.Ingress
	for _, gi := range gis {
		for _, ep := range gi.Spec.Endpoints {
			g, err1 := netip.ParseAddr(ep.GlobalIP)
			p, err2 := netip.ParseAddr(ep.PodIP)
			if err1 == nil && err2 == nil {
				out = append(out, globalnet.Ingress{GlobalIP: g, Endpoints: []netip.Addr{p}, Pod: true})
			}
		}
		if gi.Spec.GlobalIP == "" {
			continue
		}
		g, err := netip.ParseAddr(gi.Spec.GlobalIP)
		if err != nil {
			continue
		}
		key := gi.Spec.ServiceNamespace + "/" + gi.Spec.ServiceName
		out = append(out, globalnet.Ingress{GlobalIP: g, Endpoints: endpoints[key], Ports: ports[key], Sticky: sticky[key]})
	}
	return out
}

// ServicePorts pairs each port of a service with its endpoints' target port: the
// EndpointSlice port of the same name (it holds a named targetPort resolved), else the
// Service's numeric targetPort, else the port itself.
func ServicePorts(svc *corev1.Service, eps []discoveryv1.EndpointSlice) []globalnet.Port {
	resolved := map[string]int32{}
	for _, s := range eps {
		for _, p := range s.Ports {
			if p.Port != nil {
				name := ""
				if p.Name != nil {
					name = *p.Name
				}
				if _, seen := resolved[name]; !seen {
					resolved[name] = *p.Port
				}
			}
		}
	}
	var out []globalnet.Port
	for _, sp := range svc.Spec.Ports {
		target, ok := resolved[sp.Name]
		if !ok {
			target = sp.TargetPort.IntVal
		}
		if target == 0 {
			target = sp.Port
		}
		out = append(out, globalnet.Port{Port: uint16(sp.Port), Target: uint16(target)})
	}
	return out
}

func linkWithAddr(links []kernel.Link, ip netip.Addr) (kernel.Link, bool) {
	for _, l := range links {
		for _, a := range l.Addrs {
			if a.Addr() == ip {
				return l, true
			}
		}
	}
	return kernel.Link{}, false
}

func prefixes(ss []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	for _, s := range ss {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, p.Masked())
	}
	return out, errors.Join(errs...)
}

func parseAddrs(ss []string) ([]netip.Addr, error) {
	var out []netip.Addr
	var errs []error
	for _, s := range ss {
		a, err := netip.ParseAddr(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, a)
	}
	return out, errors.Join(errs...)
}

func parseAddr(s string) (netip.Addr, error) { return netip.ParseAddr(s) }

// remoteAddr is where the cable sends to a peer: its IP, the address its hostname last
// resolved to, or nothing for a peer behind masquerade (it dials this gateway).
func remoteAddr(ep *straitv1.PeerEndpoint, resolved map[string]netip.Addr) (netip.Addr, error) {
	switch {
	case ep.IP != "":
		ip, err := netip.ParseAddr(ep.IP)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("endpoint ip: %w", err)
		}
		return ip, nil
	case ep.Hostname != "":
		ip, ok := resolved[ep.Hostname]
		if !ok {
			return netip.Addr{}, fmt.Errorf("endpoint hostname %s has not resolved to an IPv4 address yet", ep.Hostname)
		}
		return ip, nil
	case ep.BehindMasquerade:
		return netip.Addr{}, nil
	}
	return netip.Addr{}, errors.New("endpoint has neither an ip, a hostname nor behindMasquerade")
}
