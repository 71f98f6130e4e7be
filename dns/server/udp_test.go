package server

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// rawExchange sends b over UDP to addr and returns the answer, nil when none comes.
func rawExchange(t *testing.T, addr string, b []byte) []byte {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 65535)
	n, err := c.Read(buf)
	if err != nil {
		return nil
	}
	return buf[:n]
}

func packed(t *testing.T, m *dns.Msg) []byte {
	t.Helper()
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUDPLoopAnswersAsMiekgServer sends the same datagrams, well-formed or not, to
// udpLoop and to miekg/dns's UDP server with the same handler: the answers must be the
// same bytes, and no answer where it gives none.
func TestUDPLoopAnswersAsMiekgServer(t *testing.T) {
	s, _, udp, _ := startServer(t, true)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ref := &dns.Server{PacketConn: pc, Handler: s, UDPSize: int(s.opts.UDPSize)}
	started := make(chan struct{})
	ref.NotifyStartedFunc = func() { close(started) }
	go func() { _ = ref.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = ref.Shutdown() })

	q := func(name string, qtype uint16, edit func(*dns.Msg)) []byte {
		m := new(dns.Msg).SetQuestion(name, qtype)
		if edit != nil {
			edit(m)
		}
		return packed(t, m)
	}
	const web, big = "web.default.svc.clusterset.local.", "big.default.svc.clusterset.local."
	twoQuestions := q(web, dns.TypeA, func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) })
	badQuestion := q(web, dns.TypeA, nil)
	badQuestion = badQuestion[:len(badQuestion)-3]
	countsLie := q(web, dns.TypeA, nil)
	binary.BigEndian.PutUint16(countsLie[10:], 1) // an additional record that is not there
	cases := map[string]struct {
		b      []byte
		answer bool
	}{
		"A":                        {q(web, dns.TypeA, nil), true},
		"AAAA, NODATA":             {q(web, dns.TypeAAAA, nil), true},
		"NXDOMAIN":                 {q("nope.default.svc.clusterset.local.", dns.TypeA, nil), true},
		"REFUSED":                  {q("example.com.", dns.TypeA, nil), true},
		"truncated, no EDNS0":      {q(big, dns.TypeA, nil), true},
		"truncated, EDNS0 4096":    {q(big, dns.TypeA, func(m *dns.Msg) { m.SetEdns0(4096, true) }), true},
		"EDNS0 version 1":          {q(web, dns.TypeA, func(m *dns.Msg) { m.SetEdns0(4096, false); m.IsEdns0().SetVersion(1) }), true},
		"class CH":                 {q(web, dns.TypeA, func(m *dns.Msg) { m.Question[0].Qclass = dns.ClassCHAOS }), true},
		"opcode NOTIFY":            {q(web, dns.TypeSOA, func(m *dns.Msg) { m.Opcode = dns.OpcodeNotify }), true},
		"opcode UPDATE":            {q(web, dns.TypeA, func(m *dns.Msg) { m.Opcode = dns.OpcodeUpdate }), true},
		"opcode STATUS":            {q(web, dns.TypeA, func(m *dns.Msg) { m.Opcode = dns.OpcodeStatus }), true},
		"two questions":            {twoQuestions, true},
		"question cut short":       {badQuestion, true},
		"counts more than sent":    {countsLie, true},
		"a response":               {q(web, dns.TypeA, func(m *dns.Msg) { m.Response = true }), false},
		"shorter than a header":    {[]byte{0, 1, 2, 3, 4}, false},
		"header only, no question": {q(web, dns.TypeA, nil)[:12], true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, want := rawExchange(t, udp, c.b), rawExchange(t, pc.LocalAddr().String(), c.b)
			if (want != nil) != c.answer {
				t.Fatalf("miekg/dns answered %v, the test expects %v", want != nil, c.answer)
			}
			if string(got) != string(want) {
				var g, w dns.Msg
				_, _ = g.Unpack(got), w.Unpack(want)
				t.Errorf("got\n%v\nwant (miekg/dns)\n%v", &g, &w)
			}
		})
	}
}

// TestUDPAnswersFromTheAskedAddress: on a wildcard address, the answer leaves from the
// address the question was sent to (a client's connected socket takes no other), here
// 127.0.0.2 while the route to the client would pick 127.0.0.1; on an IPv4 socket and on
// a dual-stack one.
func TestUDPAnswersFromTheAskedAddress(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", ":0"} {
		t.Run(listen, func(t *testing.T) {
			s := New(Options{Addr: listen, UDPSockets: 2}, nil)
			s.Publish(testSnapshot())
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			addr := make(chan *net.UDPAddr, 1)
			go func() { done <- s.Run(ctx, func(u, _ net.Addr) { addr <- u.(*net.UDPAddr) }) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			var port int
			select {
			case a := <-addr:
				port = a.Port
			case err := <-done:
				t.Fatal(err)
			}
			to := net.JoinHostPort("127.0.0.2", fmt.Sprint(port))
			r := exchange(t, "udp", to, "web.default.svc.clusterset.local.", dns.TypeA, 0)
			if len(r.Answer) != 1 {
				t.Errorf("from %s: %v", to, r)
			}
		})
	}
}

// TestUDPLoopAllocations counts what answering one datagram allocates besides reading
// it: the parsed question (its slice and name), the reply's question and the A record.
// The reply message, its buffer and the control message giving its source are reused.
func TestUDPLoopAllocations(t *testing.T) {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	s := New(Options{}, nil)
	snap, names := tenThousand()
	s.Publish(snap)
	l, err := newUDPLoop(s, conn)
	if err != nil {
		t.Fatal(err)
	}
	q := packed(t, new(dns.Msg).SetQuestion(names[7], dns.TypeA))
	var reply []byte
	if n := testing.AllocsPerRun(1000, func() { reply = l.answer(q, l.outBufs[0][:0]) }); n > 4 {
		t.Errorf("%.1f allocations per answer, want at most 4", n)
	}
	var r dns.Msg
	if err := r.Unpack(reply); err != nil || len(r.Answer) != 1 {
		t.Fatalf("answer %v: %v", &r, err)
	}
	// IP_PKTINFO for 127.0.0.2 as Linux lays it out on 64-bit little-endian machines.
	oob := []byte{28, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 127, 0, 0, 2, 127, 0, 0, 2, 0, 0, 0, 0}
	if src := l.source(oob); len(src) == 0 {
		t.Fatal("no source from an IP_PKTINFO control message")
	}
	if n := testing.AllocsPerRun(1000, func() { l.source(oob) }); n != 0 {
		t.Errorf("%.1f allocations for the source of a datagram to the same address, want 0", n)
	}
}
