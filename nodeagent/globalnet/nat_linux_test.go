package globalnet

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/nodeagent/kernel"
	"github.com/straitnet/strait/test/require"
)

var own = kernel.Ownership{NFTable: Table, Table: 4242, Protocol: 242, RulePriority: 4242}

// TestNATInNetns runs the computed NAT on a real kernel: a "remote" namespace (a remote
// cluster's egress IP 242.0.2.1) reaches global IPs on a gateway namespace that fronts
// two pods on 10.7.0.0/24, and the pods reach the remote through the egress IPs.
// natLab is a "remote" namespace (a remote cluster's egress IP 242.0.2.1) and a gateway
// namespace that fronts two pods on 10.7.0.0/24.
type natLab struct {
	remote, gw, pod1, pod2 *netns.NS
	k                      *kernel.Linux
}

func newNATLab(t testing.TB) *natLab {
	require.Root(t)
	remote, gw, pod1, pod2 := netns.New(t, "remote"), netns.New(t, "gw"), netns.New(t, "pod1"), netns.New(t, "pod2")
	netns.Veth(t, remote, "eth0", gw, "wan")
	remote.AddAddr(t, "eth0", "198.51.100.2/24")
	remote.AddAddr(t, "lo", "242.0.2.1/32")
	remote.Run(t, "ip", "route", "add", "242.0.1.0/24", "via", "198.51.100.1", "src", "242.0.2.1")
	gw.AddAddr(t, "wan", "198.51.100.1/24")
	gw.AddRoute(t, "242.0.2.0/24", "198.51.100.2", "wan")
	gw.Bridge(t, "cni0")
	gw.AddAddr(t, "cni0", "10.7.0.1/24")
	for i, p := range []*netns.NS{pod1, pod2} {
		host := fmt.Sprintf("veth%d", i)
		netns.Veth(t, p, "eth0", gw, host)
		gw.Enslave(t, host, "cni0")
		p.AddAddr(t, "eth0", fmt.Sprintf("10.7.0.%d/24", 5+i))
		p.AddRoute(t, "default", "10.7.0.1", "eth0")
		p.ServeEcho(t, "0.0.0.0:7000")
	}
	remote.ServeEcho(t, "242.0.2.1:7000")
	k, err := kernel.NewLinux(gw.Handle)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return &natLab{remote: remote, gw: gw, pod1: pod1, pod2: pod2, k: k}
}

// TestNATInNetns runs the computed NAT on a real kernel: the remote reaches global IPs
// on the gateway, and the pods reach the remote through the egress IPs.
func TestNATInNetns(t *testing.T) {
	l := newNATLab(t)
	remote, pod1, pod2, k := l.remote, l.pod1, l.pod2, l.k
	in := Input{
		LocalCIDRs:        []netip.Prefix{netip.MustParsePrefix("10.7.0.0/16")},
		RemoteGlobalCIDRs: []netip.Prefix{netip.MustParsePrefix("242.0.2.0/24")},
		EgressIPs:         []netip.Addr{a("242.0.1.1"), a("242.0.1.2")},
		Ingress: []Ingress{
			// Services on port 80 whose pods listen on 7000.
			{GlobalIP: a("242.0.1.10"), Endpoints: []netip.Addr{a("10.7.0.5")}, Ports: []Port{{Port: 80, Target: 7000}}},
			{GlobalIP: a("242.0.1.11"), Endpoints: []netip.Addr{a("10.7.0.6")}, Pod: true},
			{GlobalIP: a("242.0.1.20"), Endpoints: []netip.Addr{a("10.7.0.5"), a("10.7.0.6")}, Ports: []Port{{Port: 80, Target: 7000}}},
			// The same with ClientIP session affinity.
			{GlobalIP: a("242.0.1.21"), Endpoints: []netip.Addr{a("10.7.0.5"), a("10.7.0.6")}, Ports: []Port{{Port: 80, Target: 7000}},
				Sticky: true},
		},
	}
	ctx := context.Background()
	if err := kernel.Apply(ctx, k, own, Compute(in)); err != nil {
		t.Fatal(err)
	}

	// What an operator reads: nft prints the whole table (it aborts on a concatenation
	// it cannot type).
	if out, err := l.gw.Command(ctx, "nft", "list", "table", "ip", Table).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "242.0.1.20 . 80 : 7000") || !strings.Contains(string(out), "jhash ip saddr mod 16") {
		t.Fatalf("nft list table ip %s: %v\n%s", Table, err, out)
	}
	// Ingress to a one-endpoint service: port 80 reaches the pod's 7000, and the pod sees
	// the remote egress IP.
	if got, err := remote.WhoAmI("242.0.1.10:80", 2*time.Second); err != nil || got != "242.0.2.1" {
		t.Fatalf("remote → 242.0.1.10:80: server saw %q, %v; want 242.0.2.1", got, err)
	}
	// A port the service does not have is not translated.
	if _, err := remote.WhoAmI("242.0.1.10:7000", 300*time.Millisecond); err == nil {
		t.Fatal("remote → 242.0.1.10:7000 answered: a port the service does not expose was translated")
	}
	// A headless pod's global IP keeps the port.
	if got, err := remote.WhoAmI("242.0.1.11:7000", 2*time.Second); err != nil || got != "242.0.2.1" {
		t.Fatalf("remote → 242.0.1.11:7000: server saw %q, %v; want 242.0.2.1", got, err)
	}
	// Ingress load-balanced over two endpoints: both answer within a few tries, and both
	// see the remote egress IP.
	seen := map[string]bool{}
	for i := 0; i < 40 && len(seen) < 2; i++ {
		src, server, err := remote.Exchange("242.0.1.20:80", 2*time.Second)
		if err != nil || src != "242.0.2.1" {
			t.Fatalf("remote → 242.0.1.20:80: server saw %q, %v", src, err)
		}
		seen[server] = true
	}
	if !seen["10.7.0.5"] || !seen["10.7.0.6"] {
		t.Fatalf("remote → 242.0.1.20 reached only %v in 40 connections, want both endpoints", seen)
	}
	// With affinity, one source reaches one endpoint, connection after connection.
	sticky := map[string]bool{}
	for range 20 {
		_, server, err := remote.Exchange("242.0.1.21:80", 2*time.Second)
		if err != nil {
			t.Fatalf("remote → 242.0.1.21:80: %v", err)
		}
		sticky[server] = true
	}
	if len(sticky) != 1 {
		t.Fatalf("remote → 242.0.1.21 (ClientIP affinity) reached %v in 20 connections, want one endpoint", sticky)
	}
	hits := map[string]int{}
	for i := 0; i < 40; i++ {
		got, err := pod1.WhoAmI("242.0.2.1:7000", 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		hits[got]++
	}
	// Egress: a pod is SNATed to one egress IP, always the same one.
	if len(hits) != 1 || (hits["242.0.1.1"] != 40 && hits["242.0.1.2"] != 40) {
		t.Fatalf("pod1 → remote: remote saw %v, want one egress IP every time", hits)
	}
	// Headless pod: its own global IP.
	if got, err := pod2.WhoAmI("242.0.2.1:7000", 2*time.Second); err != nil || got != "242.0.1.11" {
		t.Fatalf("pod2 → remote: remote saw %q, %v; want 242.0.1.11", got, err)
	}
	// Removing the remote (no remote global CIDRs) removes the NAT: the table is gone.
	if err := kernel.Apply(ctx, k, own, Compute(Input{EgressIPs: in.EgressIPs})); err != nil {
		t.Fatal(err)
	}
	if d, _ := kernel.Dump(ctx, k, own); d != "" {
		t.Fatalf("after removing the remote: %s", d)
	}
	if _, err := remote.WhoAmI("242.0.1.10:80", 300*time.Millisecond); err == nil {
		t.Fatal("global IP still answers after its NAT was removed")
	}
}
