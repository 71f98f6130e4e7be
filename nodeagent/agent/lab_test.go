package agent

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/cable/ipsec"
	"github.com/straitnet/strait/nodeagent/cable/vxlan"
	"github.com/straitnet/strait/nodeagent/globalnet"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
	"github.com/straitnet/strait/test/cabletest"
	"github.com/straitnet/strait/test/require"
)

// routedDriver is the plainest cable: gateways reach each other's CIDRs by routing over
// the WAN, no encapsulation. It lets the data-plane tests run without a tunnel; the
// cable drivers have their own tests.
type routedDriver struct {
	mu        sync.Mutex
	local     cable.Local
	converged []cable.Remote
	// down makes Connections report every remote of the last Converge as not connected
	// (with it unset Connections reports nothing); converges counts Converge calls.
	down      bool
	converges int
	// nat, when set, makes Connections report every remote connected through a NAT at
	// that endpoint, as a driver that learnt it from the handshake does.
	nat netip.AddrPort
}

func (*routedDriver) Name() straitv1.CableDriver { return "routed" }
func (*routedDriver) PublicKey() string          { return "" }
func (d *routedDriver) Converge(_ context.Context, local cable.Local, remotes []cable.Remote) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.local, d.converged = local, remotes
	d.converges++
	return nil
}
func (d *routedDriver) Connections(context.Context) ([]cable.Connection, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.down && !d.nat.IsValid() {
		return nil, nil
	}
	var out []cable.Connection
	for _, r := range d.converged {
		c := cable.Connection{ClusterID: r.ClusterID}
		if !d.down {
			c.Connected, c.Endpoint, c.NATDetected = true, d.nat, true
		}
		out = append(out, c)
	}
	return out, nil
}
func (d *routedDriver) Cleanup(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.converged = nil
	return nil
}
func (*routedDriver) Route(r cable.Remote) (string, netip.Addr) { return "wan", r.IP }

// remotes are the remotes of the last Converge; nil after Cleanup.
func (d *routedDriver) remotes() []cable.Remote {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.converged
}

// setDown sets down; convergeCount reads converges.
func (d *routedDriver) setDown(down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = down
}

// setNAT sets nat.
func (d *routedDriver) setNAT(ep netip.AddrPort) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.nat = ep
}

func (d *routedDriver) convergeCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.converges
}

// psk is the PSK of the last Converge.
func (d *routedDriver) psk() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return string(d.local.PSK)
}

// labNode is a node namespace with one pod namespace behind its cni0 bridge.
type labNode struct {
	name   string
	ns     *netns.NS
	kernel *kernel.Linux
	dp     *Dataplane
	node   corev1.Node
	pod    *netns.NS
	podIP  netip.Addr
	wanIP  netip.Addr // gateway-capable nodes only
	driver cable.Driver
	// stop ends what runs beside the node's driver (its gateway process, its charon) and
	// fails the test if that left anything behind; nil when nothing does. It also runs
	// when the test ends.
	stop func()
}

// routed is the node's routedDriver (tests on the routed lab only).
func (n *labNode) routed() *routedDriver { return n.driver.(*routedDriver) }

type labCluster struct {
	id         string
	lan        *netns.NS
	nodes      []*labNode
	membership *straitv1.Membership
	active     string
	ingresses  []straitv1.GlobalIngress
	endpoints  map[string][]netip.Addr
	ports      map[string][]globalnet.Port
	// peers lists the remote clusters this cluster has a Peer for.
	peers []*labCluster
}

type lab struct {
	t        *testing.T
	wan      *netns.NS
	clusters []*labCluster
	driver   straitv1.CableDriver
	// psk is the ipsec cable's pre-shared key, the same in both clusters.
	psk []byte
}

// labCablePort is the cable port of both clusters.
const labCablePort = 4500

// newLab builds two clusters on one WAN: each with gateway-capable nodes gw1 and gw2 and
// a plain node, every node with a pod. Node namespaces have rp_filter strict, as many
// distributions do. With globalnet both clusters use pods 10.7.0.0/16.
func newLab(t *testing.T, globalnet bool) *lab { return newLabWithCable(t, globalnet, "routed") }

// newLabWithCable is newLab with the named cable between gateways: "routed" (no tunnel)
// or a real driver: vxlan (in this process), wireguard (an embedded wireguard-go device
// in a gateway process of its own per gateway node, with one key pair per cluster) or
// ipsec (the driver in this process, a charon sidecar with kernel-libipsec per gateway
// node).
func newLabWithCable(t *testing.T, globalnet bool, driver straitv1.CableDriver) *lab {
	require.Root(t)
	if driver == straitv1.CableIPsec {
		cabletest.RequireCharon(t)
	}
	l := &lab{t: t, wan: netns.New(t, "wan"), driver: driver, psk: []byte("the lab's pre-shared key")}
	l.wan.Bridge(t, "br0")
	for c := 1; c <= 2; c++ {
		l.clusters = append(l.clusters, l.newCluster(c, globalnet))
	}
	l.clusters[0].peers = []*labCluster{l.clusters[1]}
	l.clusters[1].peers = []*labCluster{l.clusters[0]}
	return l
}

func (l *lab) newCluster(c int, withGlobalnet bool) *labCluster {
	t := l.t
	podNet := func(i int) string { return fmt.Sprintf("10.%d.%d", c*10, i) }
	m := &straitv1.Membership{ObjectMeta: metav1.ObjectMeta{Name: straitv1.MembershipName, Namespace: straitv1.SystemNamespace},
		Spec: straitv1.MembershipSpec{ClusterSet: "strait-system/lab", ClusterID: fmt.Sprintf("c%d", c),
			PodCIDRs: []string{fmt.Sprintf("10.%d.0.0/16", c*10)}, ServiceCIDRs: []string{fmt.Sprintf("10.%d.0.0/16", c*10+1)},
			Cable:               straitv1.MemberCable{Driver: l.driver, Port: labCablePort},
			GatewayNodeSelector: map[string]string{"strait.io/gateway": "true"}}}
	if withGlobalnet {
		podNet = func(i int) string { return fmt.Sprintf("10.7.%d", i) }
		m.Spec.PodCIDRs, m.Spec.ServiceCIDRs = []string{"10.7.0.0/16"}, []string{"10.96.0.0/16"}
		m.Spec.Globalnet = &straitv1.MemberGlobalnet{GlobalCIDR: fmt.Sprintf("242.%d.0.0/16", c),
			EgressIPs: []string{fmt.Sprintf("242.%d.0.1", c), fmt.Sprintf("242.%d.0.2", c)}}
	}
	cl := &labCluster{id: m.Spec.ClusterID, lan: netns.New(t, fmt.Sprintf("c%d-lan", c)), membership: m,
		endpoints: map[string][]netip.Addr{}, ports: map[string][]globalnet.Port{}}
	cl.lan.Bridge(t, "br0")
	var wgKey string // the cluster's WireGuard private key, shared by its gateways
	if l.driver == straitv1.CableWireGuard {
		k, err := wgtypes.GeneratePrivateKey()
		if err != nil {
			t.Fatal(err)
		}
		wgKey = k.String()
	}
	names := []string{"gw1", "gw2", "node"}
	for i, short := range names {
		i++ // node i has 10.0.c.i and pod subnet <podNet(i)>.0/24
		n := &labNode{name: fmt.Sprintf("c%d-%s", c, short)}
		n.ns = netns.New(t, n.name)
		if err := n.ns.SetSysctl("net/ipv4/conf/all/rp_filter", "1"); err != nil {
			t.Fatal(err)
		}
		netns.Veth(t, n.ns, "eth0", cl.lan, "p"+short)
		cl.lan.Enslave(t, "p"+short, "br0")
		n.ns.AddAddr(t, "eth0", fmt.Sprintf("10.0.%d.%d/24", c, i))
		n.ns.Bridge(t, "cni0")
		n.ns.AddAddr(t, "cni0", podNet(i)+".1/24")
		n.pod = netns.New(t, n.name+"-pod")
		netns.Veth(t, n.pod, "eth0", n.ns, "vpod")
		n.ns.Enslave(t, "vpod", "cni0")
		n.podIP = netip.MustParseAddr(podNet(i) + ".2")
		n.pod.AddAddr(t, "eth0", n.podIP.String()+"/24")
		n.pod.AddRoute(t, "default", podNet(i)+".1", "eth0")
		n.node = corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{}, Annotations: map[string]string{}},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", c, i)}}}}
		if short != "node" {
			n.wanIP = netip.MustParseAddr(fmt.Sprintf("203.0.113.%d", c*10+i))
			netns.Veth(t, n.ns, "wan", l.wan, fmt.Sprintf("c%d%s", c, short))
			l.wan.Enslave(t, fmt.Sprintf("c%d%s", c, short), "br0")
			n.ns.AddAddr(t, "wan", n.wanIP.String()+"/24")
			n.node.Labels["strait.io/gateway"] = "true"
			n.node.Annotations[AnnotationGatewayIP] = n.wanIP.String()
			n.driver, n.stop = l.newDriver(n, wgKey)
		}
		k, err := kernel.NewLinux(n.ns.Handle)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(k.Close)
		n.kernel, n.dp = k, NewDataplane(k)
		cl.nodes = append(cl.nodes, n)
	}
	// The CNI's part: every node routes the other nodes' pod subnets over the LAN.
	for _, n := range cl.nodes {
		for j, o := range cl.nodes {
			if o != n {
				n.ns.AddRoute(t, podNet(j+1)+".0/24", fmt.Sprintf("10.0.%d.%d", c, j+1), "eth0")
			}
		}
	}
	cl.active = cl.nodes[0].name
	return cl
}

func (cl *labCluster) node(short string) *labNode {
	for _, n := range cl.nodes {
		if n.name == cl.id+"-"+short {
			return n
		}
	}
	panic("no node " + short)
}

func (cl *labCluster) activeNode() *labNode {
	for _, n := range cl.nodes {
		if n.name == cl.active {
			return n
		}
	}
	return nil
}

// peerObjects are the Peers the hub would write into cl.
func (cl *labCluster) peerObjects() []straitv1.Peer {
	var out []straitv1.Peer
	for _, r := range cl.peers {
		p := straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Name: r.id, Namespace: straitv1.SystemNamespace},
			Spec: straitv1.PeerSpec{ClusterID: r.id}}
		if g := r.membership.Spec.Globalnet; g != nil {
			p.Spec.CIDRs = []string{g.GlobalCIDR}
		} else {
			p.Spec.CIDRs = append(append([]string{}, r.membership.Spec.PodCIDRs...), r.membership.Spec.ServiceCIDRs...)
		}
		if a := r.activeNode(); a != nil {
			p.Spec.Endpoint = &straitv1.PeerEndpoint{Gateway: a.name, IP: a.wanIP.String(), Port: labCablePort,
				Driver: r.membership.Spec.Cable.Driver, PublicKey: a.driver.PublicKey()}
		}
		out = append(out, p)
	}
	return out
}

func (l *lab) snapshot(cl *labCluster, n *labNode) Snapshot {
	links, err := n.kernel.Links(context.Background())
	if err != nil {
		l.t.Fatal(err)
	}
	var nodes []corev1.Node
	for _, o := range cl.nodes {
		nodes = append(nodes, o.node)
	}
	s := Snapshot{NodeName: n.name, Membership: cl.membership, Peers: cl.peerObjects(), Nodes: nodes,
		ActiveGateway: cl.active, Links: links, Ingresses: cl.ingresses, Endpoints: cl.endpoints, Ports: cl.ports}
	if n.driver != nil {
		s.Driver, s.PSK = n.driver, l.psk
	}
	return s
}

// converge runs every node's Dataplane once, in every cluster or the ones given, and
// fails on any error.
func (l *lab) converge(only ...*labCluster) {
	l.t.Helper()
	if only == nil {
		only = l.clusters
	}
	for _, cl := range only {
		for _, n := range cl.nodes {
			if _, err := n.dp.Converge(context.Background(), l.snapshot(cl, n)); err != nil {
				l.t.Fatalf("%s: %v", n.name, err)
			}
		}
	}
}

// dumps is every node's kernel.Dump.
func (l *lab) dumps() map[string]string {
	l.t.Helper()
	out := map[string]string{}
	for _, cl := range l.clusters {
		for _, n := range cl.nodes {
			d, err := kernel.Dump(context.Background(), n.kernel, route.Ownership())
			if err != nil {
				l.t.Fatalf("%s: dump: %v", n.name, err)
			}
			out[n.name] = d
		}
	}
	return out
}

// newDriver builds gateway node n's cable driver; wgKey is its cluster's WireGuard
// private key. The second result stops what runs beside the driver (nil for none).
func (l *lab) newDriver(n *labNode, wgKey string) (cable.Driver, func()) {
	t := l.t
	routing := cable.Routing{Table: route.Table, Protocol: route.CableProtocol}
	switch l.driver {
	case "routed":
		return &routedDriver{}, nil
	case straitv1.CableVXLAN:
		d, err := vxlan.New(vxlan.Config{Routing: routing, Netlink: n.ns.NL})
		if err != nil {
			t.Fatal(err)
		}
		return d, nil
	case straitv1.CableWireGuard:
		// wireguard-go works only in a process wholly inside the namespace; the gateway
		// process also gets a private /run, so the UAPI sockets of the four gateways'
		// strait-wg devices do not collide in /run/wireguard.
		gw := cabletest.StartGateway(t, n.ns.Name, wireguardKeyEnv+"="+wgKey)
		key, err := gw.PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		return &processDriver{name: straitv1.CableWireGuard, publicKey: key, gw: gw}, func() {
			if err := gw.Exit(); err != nil {
				t.Errorf("%s: gateway process: %v", n.name, err)
			}
		}
	case straitv1.CableIPsec:
		socket, stop := cabletest.StartCharon(t, n.ns.Name, filepath.Join(t.TempDir(), n.name), labCablePort)
		d, err := ipsec.New(ipsec.Config{VICISocket: socket, Routing: routing, Netlink: n.ns.NL})
		if err != nil {
			t.Fatal(err)
		}
		return d, stop
	}
	t.Fatalf("no cable %q in the lab", l.driver)
	return nil, nil
}

// processDriver is a cable driver running in a gateway process inside its node's
// namespace (cabletest.StartGateway, served by this package's TestMain), as the agent
// process runs it there. Its Cleanup also fails when the driver left files under the
// process's /run (wireguard-go's UAPI socket).
type processDriver struct {
	name      straitv1.CableDriver
	publicKey string
	gw        *cabletest.Gateway
}

func (d *processDriver) Name() straitv1.CableDriver { return d.name }
func (d *processDriver) PublicKey() string          { return d.publicKey }
func (d *processDriver) Converge(_ context.Context, local cable.Local, remotes []cable.Remote) error {
	return d.gw.Converge(local, remotes...)
}
func (d *processDriver) Connections(context.Context) ([]cable.Connection, error) {
	return d.gw.Connections()
}
func (d *processDriver) Cleanup(context.Context) error {
	files, err := d.gw.Cleanup()
	if err == nil && files != "" {
		return fmt.Errorf("files left under /run: %s", files)
	}
	return err
}
