package agent

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

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
