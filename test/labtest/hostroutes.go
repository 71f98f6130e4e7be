package labtest

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
	"github.com/straitnet/strait/lab/hostnet"
	"github.com/straitnet/strait/lab/topology"
)

// LabAddress is one address inside a range the lab routes.
type LabAddress struct {
	Addr netip.Addr
	// What says which range and what lives there.
	What string
}

// LabAddresses is LabAddresses of the running lab.
func (e *Env) LabAddresses() []LabAddress { return LabAddresses(e.Topo, e.clusterSet) }

// LabAddresses are an address of every range the lab routes from the host: each LAN (API
// servers, routers, nodes), the hub's address and its pod and service CIDRs, the WAN
// (routers, gateways), the internet, every member's pod and service CIDRs, and the
// global range under globalnet.
func LabAddresses(t *topology.Lab, cs *straitv1.ClusterSet) []LabAddress {
	var out []LabAddress
	add := func(a netip.Addr, format string, args ...any) {
		out = append(out, LabAddress{a, fmt.Sprintf(format, args...)})
	}
	add(t.Internet.Addr, "the internet (%s)", t.InternetRange)
	if t.Hub != nil {
		add(t.Hub.LANAddr.Addr(), "the hub's API server")
		add(t.HubPodCIDR.Addr().Next(), "a hub pod (%s)", t.HubPodCIDR)
		add(t.HubServiceCIDR.Addr().Next(), "the hub's kubernetes.default (%s)", t.HubServiceCIDR)
	}
	if t.Internet.Addr6.IsValid() {
		add(t.Internet.Addr6, "the internet over IPv6 (%s)", t.IPv6Range)
	}
	for _, c := range t.Clusters {
		if c.LANSubnet6.IsValid() {
			add(c.ControlPlane.LANAddr6.Addr(), "%s's API server over IPv6 (LAN %s)", c.Name, c.LANSubnet6)
			add(c.Router.WANAddr6.Addr(), "%s's router on the WAN over IPv6 (%s)", c.Name, t.WANSubnet6)
			add(c.ServiceCIDR6.Addr().Next(), "%s's IPv6 service CIDR %s", c.Name, c.ServiceCIDR6)
			for _, n := range c.Nodes {
				add(n.PodCIDR6.Addr().Next().Next(), "an IPv6 pod on %s (%s)", n.Name, n.PodCIDR6)
			}
		}
		add(c.ControlPlane.LANAddr.Addr(), "%s's API server (LAN %s)", c.Name, c.LANSubnet)
		add(c.Router.LANAddr.Addr(), "%s's router on its LAN", c.Name)
		add(c.Router.WANAddr.Addr(), "%s's router on the WAN (%s)", c.Name, t.WANSubnet)
		add(c.DNSServiceIP, "%s's cluster DNS (service CIDRs %v)", c.Name, c.ServiceCIDRs())
		for _, n := range c.Nodes {
			add(n.LANAddr.Addr(), "%s", n.Name)
			if n.PodGateway.IsValid() { // an IPv6-only cluster's nodes have no IPv4 pods
				add(n.PodGateway.Next(), "a pod on %s (pod CIDR %s)", n.Name, c.PodCIDR)
			}
			if n.WANAddr.IsValid() {
				add(n.WANAddr.Addr(), "%s on the WAN", n.Name)
			}
			if n.ExternalIP.IsValid() {
				add(n.ExternalIP, "%s's public address on its router", n.Name)
			}
		}
	}
	if g := cs.Spec.Globalnet; g != nil && g.Enabled {
		r := g.CIDRRange
		if r == "" {
			r = straitv1.DefaultGlobalCIDRRange
		}
		if p, err := netip.ParsePrefix(r); err == nil {
			add(p.Addr().Next(), "a global IP (%s)", p)
		}
		for _, c := range cs.Spec.Clusters {
			if p, err := netip.ParsePrefix(c.GlobalCIDR); err == nil {
				add(p.Addr().Next(), "a global IP of %s (%s)", c.Name, p)
			}
		}
	}
	return out
}

// HostRoute asks the host's namespace which way it would send a packet to addr (`ip
// route get`: nothing is sent) and returns the device and ip's line.
func HostRoute(addr netip.Addr) (dev, line string, err error) {
	out, err := exec.Command("ip", "-o", "route", "get", addr.String()).CombinedOutput()
	line = strings.Join(strings.Fields(strings.ReplaceAll(string(out), "\\", "")), " ")
	if err != nil {
		return "", line, fmt.Errorf("ip route get %s: %w: %s", addr, err, line)
	}
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "dev" {
			return f[i+1], line, nil
		}
	}
	return "", line, fmt.Errorf("ip route get %s: no device in %q", addr, line)
}

// HostRoutesIntoTheLab lists the addresses the host would still send into the lab's
// link: after "lab down", none.
func HostRoutesIntoTheLab(addrs []LabAddress) []string {
	var out []string
	for _, a := range addrs {
		// An error (no route at all) is no way into the lab either.
		if dev, line, _ := HostRoute(a.Addr); dev == topology.HostLinkName {
			out = append(out, fmt.Sprintf("%s (%s): %s", a.Addr, a.What, line))
		}
	}
	return out
}

// CheckHostRoutes fails t unless the host would send an address of every range the lab
// routes into the lab's link (never out through its default route) while its resolvers
// keep their way; it logs ip route get's answer for each. Nothing is sent.
func (e *Env) CheckHostRoutes(t testing.TB) {
	t.Helper()
	for _, a := range e.LabAddresses() {
		dev, line, err := HostRoute(a.Addr)
		t.Logf("%-45s %s", a.What, line)
		if err != nil || dev != topology.HostLinkName {
			t.Errorf("host → %s (%s): %q %v, want dev %s", a.Addr, a.What, line, err, topology.HostLinkName)
		}
	}
	data, err := os.ReadFile(hostnet.ResolvConf)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range hostnet.Resolvers(data, hostnet.ResolvConf) {
		dev, line, _ := HostRoute(r.Prefix.Addr())
		t.Logf("%-45s %s", r.What, line)
		if dev == topology.HostLinkName {
			t.Errorf("the host's %s goes into the lab: %s", r.What, line)
		}
	}
}
