package agent

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/globalnet"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/nodeagent/route"
)

func node(name, ip string, gateway bool) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}}}
	if gateway {
		n.Labels["strait.io/gateway"] = "true"
	}
	return n
}

func snapshot(self string, withGlobalnet bool) Snapshot {
	m := &straitv1.Membership{Spec: straitv1.MembershipSpec{ClusterID: "g1", PodCIDRs: []string{"10.7.0.0/16"},
		ServiceCIDRs: []string{"10.96.0.0/16"}, Cable: straitv1.MemberCable{Driver: straitv1.CableWireGuard, Port: 4500},
		GatewayNodeSelector: map[string]string{"strait.io/gateway": "true"}}}
	peer := straitv1.Peer{ObjectMeta: metav1.ObjectMeta{Name: "g2"}, Spec: straitv1.PeerSpec{ClusterID: "g2",
		CIDRs:    []string{"10.8.0.0/16", "10.9.0.0/16"},
		Endpoint: &straitv1.PeerEndpoint{IP: "203.0.113.2", Port: 4500, Driver: straitv1.CableWireGuard}}}
	if withGlobalnet {
		m.Spec.Globalnet = &straitv1.MemberGlobalnet{GlobalCIDR: "242.1.0.0/16", EgressIPs: []string{"242.1.0.1"}}
		peer.Spec.CIDRs = []string{"242.2.0.0/16"}
	}
	ips := map[string]string{"gw1": "10.0.0.1", "gw2": "10.0.0.2", "plain": "10.0.0.3"}
	s := Snapshot{NodeName: self, Membership: m, Peers: []straitv1.Peer{peer}, ActiveGateway: "gw1",
		Nodes: []corev1.Node{node("gw1", "10.0.0.1", true), node("gw2", "10.0.0.2", true), node("plain", "10.0.0.3", false)},
		Links: []kernel.Link{{Name: "eth0", MTU: 9000, Addrs: []netip.Prefix{netip.PrefixFrom(netip.MustParseAddr(ips[self]), 24)}},
			{Name: "cni0", MTU: 1500, Addrs: []netip.Prefix{netip.MustParsePrefix("10.7.1.1/24")}}},
		Ingresses: []straitv1.GlobalIngress{{Spec: straitv1.GlobalIngressSpec{ServiceName: "web", ServiceNamespace: "demo", GlobalIP: "242.1.0.10"}}},
		Endpoints: map[string][]netip.Addr{"demo/web": {netip.MustParseAddr("10.7.1.5")}},
		Ports:     map[string][]globalnet.Port{"demo/web": {{Port: 80, Target: 8080}}},
	}
	if self != "plain" {
		s.Driver = &routedDriver{}
		s.PSK = []byte("g1's pre-shared key")
	}
	return s
}

func (s Snapshot) withGlobalnet() bool {
	return s.Membership != nil && s.Membership.Spec.Globalnet != nil
}

func dumpOf(t *testing.T, st kernel.State) string {
	t.Helper()
	f := kernel.NewFake(kernel.Link{Name: "eth0", Kind: "veth", MTU: 9000}, kernel.Link{Name: "wan", Kind: "veth", MTU: 9000})
	if err := kernel.Apply(context.Background(), f, route.Ownership(), st); err != nil {
		t.Fatal(err)
	}
	d, err := kernel.Dump(context.Background(), f, route.Ownership())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCompute(t *testing.T) {
	for _, tc := range []struct {
		name    string
		snap    func() Snapshot
		placed  bool
		active  bool
		want    []string
		notWant []string
	}{
		{name: "no membership: nothing, and that is the truth", placed: true,
			snap: func() Snapshot { s := snapshot("plain", false); s.Membership = nil; return s }},
		{name: "node not in the API: apply nothing",
			snap: func() Snapshot { s := snapshot("plain", false); s.NodeName = "gone"; return s }},
		{name: "no device holds the node's IP: apply nothing",
			snap: func() Snapshot { s := snapshot("plain", false); s.Links = s.Links[1:]; return s }},
		{name: "plain node routes peer CIDRs to the active gateway, MTU from a 9000 underlay minus wireguard",
			snap: func() Snapshot { return snapshot("plain", false) }, placed: true,
			want: []string{"fdb 10.0.0.1", "10.8.0.0/16 via 241.0.0.1 dev vx-strait onlink mtu=8920", "mtu=8950 mac=0a:73:0a:00:00:03 up", "neighbor 241.0.0.1 lladdr 0a:73:0a:00:00:01"}},
		{name: "passive gateway is a plain node", snap: func() Snapshot { return snapshot("gw2", false) }, placed: true,
			want: []string{"10.9.0.0/16 via 241.0.0.1 dev vx-strait"}, notWant: []string{"addr 10.7.255.255"}},
		{name: "active gateway routes into the cable (the driver's Router), health-check IP on vx-strait",
			snap: func() Snapshot { return snapshot("gw1", false) }, placed: true, active: true,
			want:    []string{"10.8.0.0/16 via 203.0.113.2 dev wan onlink mtu=9000", "fdb 10.0.0.2\n  fdb 10.0.0.3", "addr 10.7.255.255/32"},
			notWant: []string{"gn-"}},
		{name: "active gateway with no pod on it (no address in the pod CIDR) still has its health-check IP",
			snap: func() Snapshot { s := snapshot("gw1", false); s.Links = s.Links[:1]; return s }, placed: true, active: true,
			want: []string{"addr 10.7.255.255/32"}},
		{name: "active gateway under globalnet: NAT, health-check IP on vx-strait",
			snap: func() Snapshot { return snapshot("gw1", true) }, placed: true, active: true,
			want: []string{"addr 242.1.255.255/32", "242.1.0.10 : 10.7.1.5", "0 : 242.1.0.1", "242.2.0.0/16 via 203.0.113.2 dev wan"}},
		{name: "plain node under globalnet routes remote global CIDRs, no NAT",
			snap: func() Snapshot { return snapshot("plain", true) }, placed: true,
			want: []string{"242.2.0.0/16 via 241.0.0.1 dev vx-strait"}, notWant: []string{"gn-"}},
		{name: "no active gateway: nothing to route through",
			snap: func() Snapshot { s := snapshot("plain", false); s.ActiveGateway = ""; return s }, placed: true},
		{name: "lease holder without a cable driver is not active",
			snap: func() Snapshot { s := snapshot("gw1", false); s.Driver = nil; return s }, placed: true,
			notWant: []string{"dev wan"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := Compute(tc.snap())
			if d.Placed != tc.placed || d.Active != tc.active {
				t.Fatalf("placed=%v active=%v, want %v %v", d.Placed, d.Active, tc.placed, tc.active)
			}
			got := dumpOf(t, d.State)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("unexpected %q in:\n%s", w, got)
				}
			}
			if len(tc.want) == 0 && len(tc.notWant) == 0 && got != "" {
				t.Errorf("want nothing, got:\n%s", got)
			}
			if d.Active {
				if want := netip.MustParseAddr("10.7.255.255"); !tc.snap().withGlobalnet() && d.Local.HealthCheckIP != want {
					t.Errorf("health-check IP %s, want %s", d.Local.HealthCheckIP, want)
				}
				if d.Local.ClusterID != "g1" || len(d.Remotes) != 1 || d.Remotes[0].IP != netip.MustParseAddr("203.0.113.2") {
					t.Errorf("cable input: %+v %+v", d.Local, d.Remotes)
				}
				if string(d.Local.PSK) != string(tc.snap().PSK) {
					t.Errorf("cable PSK %q, want the snapshot's %q", d.Local.PSK, tc.snap().PSK)
				}
			}
		})
	}
}

// TestNoCableToAPeerOnAnotherDriver: mid-switch of the clusterset's cable driver, a peer
// whose gateway still runs the old driver gets no cable until it publishes ours.
func TestNoCableToAPeerOnAnotherDriver(t *testing.T) {
	s := snapshot("gw1", false)
	s.Peers[0].Spec.Endpoint.Driver = straitv1.CableIPsec
	d, err := Compute(s)
	if err != nil || !d.Active || len(d.Remotes) != 0 {
		t.Fatalf("active=%v remotes=%+v err=%v; want an active gateway with no remote", d.Active, d.Remotes, err)
	}
	s.Peers[0].Spec.Endpoint.Driver = straitv1.CableWireGuard
	if d, _ := Compute(s); len(d.Remotes) != 1 {
		t.Fatalf("remotes=%+v once the peer runs wireguard too, want one", d.Remotes)
	}
}

func TestGatewayCapable(t *testing.T) {
	m := snapshot("gw1", false).Membership
	gw, plain := node("gw1", "10.0.0.1", true), node("plain", "10.0.0.3", false)
	if !GatewayCapable(m, &gw) || GatewayCapable(m, &plain) || GatewayCapable(nil, &gw) {
		t.Fatal("selector not honoured")
	}
}

func TestServicePorts(t *testing.T) {
	name := func(s string) *string { return &s }
	port := func(p int32) *int32 { return &p }
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "http", Port: 80, TargetPort: intstr.FromString("web")}, // named: resolved in the slices
		{Name: "metrics", Port: 9090, TargetPort: intstr.FromInt32(9100)},
		{Name: "dns", Port: 53}, // no targetPort: the port itself
	}}}
	eps := []discoveryv1.EndpointSlice{{Ports: []discoveryv1.EndpointPort{{Name: name("http"), Port: port(8080)}}}}
	got := ServicePorts(svc, eps)
	want := []globalnet.Port{{Port: 80, Target: 8080}, {Port: 9090, Target: 9100}, {Port: 53, Target: 53}}
	if !slices.Equal(got, want) {
		t.Fatalf("ServicePorts = %v, want %v", got, want)
	}
}
