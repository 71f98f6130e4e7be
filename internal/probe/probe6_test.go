package probe

import (
	"context"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/straitnet/strait/internal/netns"
	"github.com/straitnet/strait/test/require"
)

// TestProbesOverIPv6: the probes of TestProbesTellWhatTheKernelDid over IPv6, whose
// headers take 48 bytes of a datagram: a clear path crosses full-sized at the link's
// MTU; IPv6 datagrams over 1000 bytes dropped at the server are a black hole; and a
// source NAT shows in the client's IPv6 conntrack.
func TestProbesOverIPv6(t *testing.T) {
	require.Root(t, "nft")
	client, server := netns.New(t, "pcli6"), netns.New(t, "psrv6")
	netns.Veth(t, client, "eth0", server, "eth0")
	for _, ns := range []*netns.NS{client, server} {
		if err := netns.Sysctl(ns.Name, "net/ipv6/conf/eth0/accept_dad", "0"); err != nil {
			t.Fatal(err)
		}
	}
	client.AddAddr(t, "eth0", "fd42:3fb::1/64")
	server.AddAddr(t, "eth0", "fd42:3fb::2/64")
	addr := "[fd42:3fb::2]:4243"
	// An IPv6 address is tentative until its link has a carrier, even without DAD: bind
	// once it is usable.
	var bindErr error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if bindErr = server.Do(func() error {
			ln, err := net.Listen("tcp", addr)
			if err == nil {
				ln.Close()
			}
			return err
		}); bindErr == nil {
			break
		}
	}
	if bindErr != nil {
		t.Fatal(bindErr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &logBuffer{}
	served := make(chan error, 1)
	go func() { served <- server.Do(func() error { return Serve(ctx, addr, log) }) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	inClient := func(fn func()) {
		if err := client.Do(func() error { fn(); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if inClient(func() { _, err = Dial(ctx, addr, "clear6", time.Second) }); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("a clear path over IPv6: %v", err)
	}
	var m MTU
	inClient(func() { m = PathMTU(ctx, addr, 300*time.Millisecond) })
	if !m.Small || !m.FullAnswered || m.PathMTU != 1500 {
		t.Errorf("a clear IPv6 path: %+v, want path MTU 1500 and both answered", m)
	}
	if _, err := netns.Exec(ctx, server.Name, "add table ip6 t\nadd chain ip6 t in { type filter hook input priority filter; }\nadd rule ip6 t in udp dport 4243 meta length > 1000 drop\n", "nft", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	inClient(func() { m = PathMTU(ctx, addr, 300*time.Millisecond) })
	if !m.Small || m.FullAnswered {
		t.Errorf("IPv6 datagrams over 1000 bytes dropped: %+v, want the small one answered and the full-sized one not", m)
	}
	if _, err := netns.Exec(ctx, client.Name, "add table ip6 t\nadd chain ip6 t post { type nat hook postrouting priority srcnat; }\nadd rule ip6 t post ip6 daddr fd42:3fb::2 snat to fd42:3fb::99\n", "nft", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	inClient(func() { _, err = Dial(ctx, addr, "natted6", 500*time.Millisecond) })
	if err == nil {
		t.Error("the dial through the source NAT was answered; the answers should go astray")
	}
	var flows []Flow
	inClient(func() { flows, err = Flows([]string{"fd42:3fb::2"}) })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(flows, func(f Flow) bool { return f.Src == "fd42:3fb::1" && f.ReplyDst == "fd42:3fb::99" }) {
		t.Errorf("the client's IPv6 conntrack: %s; want a flow from fd42:3fb::1 answered to fd42:3fb::99", fmt.Sprint(flows))
	}
}

// TestLookupRecordsTellsNODATAFromNXDOMAIN: a name with an A record and no AAAA is
// NOERROR with no address for AAAA; a name that does not exist is NXDOMAIN for both.
func TestLookupRecordsTellsNODATAFromNXDOMAIN(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		switch name := q.Question[0].Name; {
		case name == "v4.sample.svc.clusterset.local." && q.Question[0].Qtype == dns.TypeA:
			rr, _ := dns.NewRR(name + " 5 IN A 10.99.0.7")
			m.Answer = append(m.Answer, rr)
		case name == "dual.sample.svc.clusterset.local." && q.Question[0].Qtype == dns.TypeAAAA:
			rr, _ := dns.NewRR(name + " 5 IN AAAA fd10:1ab:0:101::7")
			m.Answer = append(m.Answer, rr)
		case name != "v4.sample.svc.clusterset.local." && name != "dual.sample.svc.clusterset.local.":
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	defer func() { _ = srv.Shutdown() }()
	servers := []string{pc.LocalAddr().String()}
	ctx := context.Background()
	got, err := queryRecords(ctx, servers, "v4.sample.svc.clusterset.local", []string{"A", "AAAA"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Rcode != "NOERROR" || !slices.Equal(got[0].Addresses, []string{"10.99.0.7"}) || got[1].Rcode != "NOERROR" || len(got[1].Addresses) != 0 {
		t.Errorf("an IPv4-only name: %+v, want A 10.99.0.7 and AAAA NOERROR with no answer", got)
	}
	got, _ = queryRecords(ctx, servers, "dual.sample.svc.clusterset.local", []string{"AAAA"}, time.Second)
	if len(got) != 1 || !slices.Equal(got[0].Addresses, []string{"fd10:1ab:0:101::7"}) {
		t.Errorf("AAAA: %+v", got)
	}
	got, _ = queryRecords(ctx, servers, "gone.sample.svc.clusterset.local", []string{"A", "AAAA"}, time.Second)
	if len(got) != 2 || got[0].Rcode != "NXDOMAIN" || got[1].Rcode != "NXDOMAIN" {
		t.Errorf("a name that does not exist: %+v, want NXDOMAIN twice", got)
	}
	if _, err := queryRecords(ctx, servers, "x", []string{"MX"}, time.Second); err == nil {
		t.Error("an MX query was taken; want A or AAAA only")
	}
}
