package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/nodeagent/cable"
	"github.com/straitnet/strait/nodeagent/health"
	"github.com/straitnet/strait/nodeagent/kernel"
)

// TestComputeDualStack: a dual-stack member's plain node routes a dual-stack peer's
// IPv6 CIDRs beside its IPv4 ones, through the same vx-strait over the IPv4 underlay,
// whichever InternalIP its Node lists first.
func TestComputeDualStack(t *testing.T) {
	s := snapshot("plain", false)
	s.Peers[0].Spec.CIDRs = append(s.Peers[0].Spec.CIDRs, "2001:db8:8::/56")
	for i := range s.Nodes {
		v6 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "2001:db8::" + s.Nodes[i].Name[len(s.Nodes[i].Name)-1:]}
		s.Nodes[i].Status.Addresses = append([]corev1.NodeAddress{v6}, s.Nodes[i].Status.Addresses...)
	}
	d, err := Compute(s)
	if err != nil || !d.Placed {
		t.Fatalf("placed=%v err=%v", d.Placed, err)
	}
	got := dumpOf(t, d.State)
	for _, w := range []string{
		"local=10.0.0.3 parent=eth0 mtu=8950", // IPv4 underlay, the IPv6 InternalIP listed first
		"addr fd53:7472:6169::a00:3/96",
		"neighbor fd53:7472:6169::a00:1 lladdr 0a:73:0a:00:00:01",
		"route table=4242 proto=242 2001:db8:8::/56 via fd53:7472:6169::a00:1 dev vx-strait onlink mtu=8920",
		"route table=4242 proto=242 10.8.0.0/16 via 241.0.0.1 dev vx-strait onlink mtu=8920",
		"rule ip6 pref=4242 table=4242", "rule pref=4242 table=4242",
		"nft table ip6 strait", "nft table ip strait",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
}

// TestComputeIPv6Only: a node whose only InternalIP is IPv6 is placed on the device that
// holds it and runs vx-strait over IPv6, with nothing of IPv4.
func TestComputeIPv6Only(t *testing.T) {
	s := snapshot("plain", false)
	s.Membership.Spec.PodCIDRs, s.Membership.Spec.ServiceCIDRs = []string{"2001:db8:7::/56"}, []string{"2001:db8:96::/112"}
	s.Peers[0].Spec.CIDRs = []string{"2001:db8:8::/56"}
	ips := map[string]string{"gw1": "2001:db8::1", "gw2": "2001:db8::2", "plain": "2001:db8::3"}
	for i := range s.Nodes {
		s.Nodes[i].Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ips[s.Nodes[i].Name]}}
	}
	s.Links = []kernel.Link{{Name: "eth0", MTU: 9000, Addrs: []netip.Prefix{netip.MustParsePrefix("2001:db8::3/64")}}}
	d, err := Compute(s)
	if err != nil || !d.Placed {
		t.Fatalf("placed=%v err=%v", d.Placed, err)
	}
	got := dumpOf(t, d.State)
	for _, w := range []string{
		"link vx-strait vxlan vni=4242 port=4804 local=2001:db8::3 parent=eth0 mtu=8930 mac=0a:73:00:00:00:03 up",
		"  addr fd53:7472:6169::3/96\n  fdb 2001:db8::1\n  neighbor fd53:7472:6169::1 lladdr 0a:73:00:00:00:01\n",
		"route table=4242 proto=242 2001:db8:8::/56 via fd53:7472:6169::1 dev vx-strait onlink mtu=8920",
		"rule ip6 pref=4242 table=4242",
		"nft table ip6 strait",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
	for _, w := range []string{"241.", "rule pref=", "nft table ip strait"} {
		if strings.Contains(got, w) {
			t.Errorf("IPv4 %q on an IPv6-only node:\n%s", w, got)
		}
	}
}

// TestHealthCheckAddressesPerFamily: the active gateway of a dual-stack member owns a
// health-check address in each family, on vx-strait, and offers them to its cables;
// under globalnet its IPv4 one is in the global CIDR, its IPv6 one stays in the pod
// range, and the cable carries the global CIDR and the IPv6 ranges as they are. An
// IPv6-only member has no IPv4 one.
func TestHealthCheckAddressesPerFamily(t *testing.T) {
	for _, tc := range []struct {
		name      string
		globalnet bool
		pods      []string
		v4, v6    string
		cidrs     string
	}{
		{name: "dual-stack", pods: []string{"10.7.0.0/16", "fd10:7::/56"}, v4: "10.7.255.255", v6: "fd10:7:0:ff:ffff:ffff:ffff:ffff",
			cidrs: "[10.7.0.0/16 fd10:7::/56 10.96.0.0/16 fd10:96::/112]"},
		{name: "dual-stack under globalnet", globalnet: true, pods: []string{"10.7.0.0/16", "fd10:7::/56"}, v4: "242.1.255.255",
			v6: "fd10:7:0:ff:ffff:ffff:ffff:ffff", cidrs: "[242.1.0.0/16 fd10:7::/56 fd10:96::/112]"},
		{name: "IPv6 only", pods: []string{"fd10:7::/56"}, v6: "fd10:7:0:ff:ffff:ffff:ffff:ffff", cidrs: "[fd10:7::/56 fd10:96::/112]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snapshot("gw1", tc.globalnet)
			s.Membership.Spec.PodCIDRs = tc.pods
			s.Membership.Spec.ServiceCIDRs = []string{"fd10:96::/112"}
			if len(tc.pods) == 2 {
				s.Membership.Spec.ServiceCIDRs = []string{"10.96.0.0/16", "fd10:96::/112"}
			}
			d, err := Compute(s)
			if err != nil || !d.Active {
				t.Fatalf("active=%v err=%v", d.Active, err)
			}
			if got := addrOrEmpty(d.Local.HealthCheckIP); got != tc.v4 {
				t.Errorf("IPv4 health-check address %q, want %q", got, tc.v4)
			}
			if got := addrOrEmpty(d.Local.HealthCheckIPv6); got != tc.v6 {
				t.Errorf("IPv6 health-check address %q, want %q", got, tc.v6)
			}
			if got := fmt.Sprint(d.Local.CIDRs); got != tc.cidrs {
				t.Errorf("the cable carries %s, want %s", got, tc.cidrs)
			}
			got := dumpOf(t, d.State)
			for _, a := range []string{tc.v4 + "/32", tc.v6 + "/128"} {
				if a[0] != '/' && !strings.Contains(got, "  addr "+a+"\n") {
					t.Errorf("vx-strait does not hold the health-check address %s:\n%s", a, got)
				}
			}
		})
	}
}

func addrOrEmpty(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// TestHealthChecksPerFamily: a peer is probed in each family both gateways have an
// address of, and is reachable only when every family answers; a family whose probe
// could not run goes by the cable.
func TestHealthChecksPerFamily(t *testing.T) {
	local := cable.Local{HealthCheckIP: netip.MustParseAddr("10.7.255.255"), HealthCheckIPv6: netip.MustParseAddr("fd10:7::ffff")}
	both := &straitv1.PeerEndpoint{HealthCheckIP: "10.8.255.255", HealthCheckIPv6: "fd10:8::ffff"}
	if got := healthCheckPairs(local, both); len(got) != 2 || got[0].family != corev1.IPv4Protocol || got[1].dst.String() != "fd10:8::ffff" {
		t.Errorf("pairs with a dual-stack peer: %+v", got)
	}
	if got := healthCheckPairs(local, &straitv1.PeerEndpoint{HealthCheckIP: "10.8.255.255"}); len(got) != 1 {
		t.Errorf("pairs with an IPv4-only peer (or one of an older agent): %+v", got)
	}
	if got := healthCheckPairs(cable.Local{HealthCheckIP: local.HealthCheckIP}, both); len(got) != 1 || got[0].family != corev1.IPv4Protocol {
		t.Errorf("pairs of an IPv4-only gateway with a dual-stack peer: %+v", got)
	}
	answered := health.Result{Sent: 5, Received: 5, RTT: time.Millisecond}
	lost := health.Result{Sent: 5}
	v4, v6 := netip.MustParseAddr("10.8.255.255"), netip.MustParseAddr("fd10:8::ffff")
	for _, tc := range []struct {
		name   string
		checks familyChecks
		cable  bool
		want   bool
		msg    string
	}{
		{"both answer", familyChecks{{family: corev1.IPv4Protocol, dst: v4, r: answered}, {family: corev1.IPv6Protocol, dst: v6, r: answered}}, false, true,
			"IPv4: 5 of 5 health checks to 10.8.255.255 answered; IPv6: 5 of 5 health checks to fd10:8::ffff answered"},
		{"IPv6 lost", familyChecks{{family: corev1.IPv4Protocol, dst: v4, r: answered}, {family: corev1.IPv6Protocol, dst: v6, r: lost}}, true, false,
			"IPv6: 0 of 5 health checks to fd10:8::ffff answered"},
		{"IPv6 not probed, cable up", familyChecks{{family: corev1.IPv4Protocol, dst: v4, r: answered}, {family: corev1.IPv6Protocol, dst: v6, err: errors.New("icmp socket on fd10:7::ffff: cannot assign requested address")}}, true, true,
			"IPv6: icmp socket"},
	} {
		ok, msg := tc.checks.reachable(tc.cable)
		if ok != tc.want || !strings.Contains(msg, tc.msg) {
			t.Errorf("%s: reachable %v %q, want %v and %q", tc.name, ok, msg, tc.want, tc.msg)
		}
	}
}
