package health

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Result of one probe round.
type Result struct {
	Sent, Received int
	// RTT is the mean round-trip time of the answered probes.
	RTT time.Duration
}

// LossPercent is the share of unanswered probes.
func (r Result) LossPercent() int32 {
	if r.Sent == 0 {
		return 0
	}
	return int32(100 * (r.Sent - r.Received) / r.Sent)
}

// LossRatio is LossPercent as a fraction, for metrics.
func (r Result) LossRatio() float64 {
	if r.Sent == 0 {
		return 0
	}
	return float64(r.Sent-r.Received) / float64(r.Sent)
}

// Prober measures one destination.
type Prober interface {
	Probe(ctx context.Context, src, dst netip.Addr) (Result, error)
}

// ICMP probes with echo requests from a raw socket in a network namespace.
type ICMP struct {
	ns       netns.NsHandle
	count    int
	interval time.Duration
	timeout  time.Duration
	seq      atomic.Uint32
}

// NewICMP sends count echo requests interval apart per round and waits timeout for the
// last reply. ns is the namespace to probe from (netns.None(): the caller's).
func NewICMP(ns netns.NsHandle, count int, interval, timeout time.Duration) *ICMP {
	return &ICMP{ns: ns, count: count, interval: interval, timeout: timeout}
}

// echo is what an ICMP echo exchange differs in between the families: the raw socket,
// the message types and the protocol number replies are parsed with. The kernel fills in
// an ICMPv6 message's checksum (its pseudo-header has the addresses the route picks).
type echo struct {
	network        string
	request, reply icmp.Type
	protocol       int
}

func echoOf(a netip.Addr) echo {
	if a.Is4() || a.Is4In6() {
		return echo{network: "ip4:icmp", request: ipv4.ICMPTypeEcho, reply: ipv4.ICMPTypeEchoReply, protocol: 1}
	}
	return echo{network: "ip6:ipv6-icmp", request: ipv6.ICMPTypeEchoRequest, reply: ipv6.ICMPTypeEchoReply, protocol: 58}
}

func (p *ICMP) listen(src netip.Addr) (*icmp.PacketConn, error) {
	open := func() (*icmp.PacketConn, error) { return icmp.ListenPacket(echoOf(src).network, src.Unmap().String()) }
	if !p.ns.IsOpen() {
		return open()
	}
	type res struct {
		c   *icmp.PacketConn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := netns.Set(p.ns); err != nil {
			ch <- res{nil, err}
			return
		}
		c, err := open()
		ch <- res{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// Probe sends the round's echo requests from src to dst and collects the replies; src
// and dst are of one family, ICMPv6 for IPv6.
func (p *ICMP) Probe(ctx context.Context, src, dst netip.Addr) (Result, error) {
	if err := sameFamily(src, dst); err != nil {
		return Result{}, err
	}
	e := echoOf(dst)
	conn, err := p.listen(src)
	if err != nil {
		return Result{}, fmt.Errorf("icmp socket on %s: %w", src, err)
	}
	defer conn.Close()
	id := int(p.seq.Add(1)&0xffff) ^ 0x5354
	var mu sync.Mutex
	sent := map[int]time.Time{}
	var res Result
	var total time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		readReplies(conn, e, dst, id, func(seq int, at time.Time) bool {
			mu.Lock()
			t0, ok := sent[seq]
			delete(sent, seq)
			mu.Unlock()
			if ok {
				res.Received++
				total += at.Sub(t0)
			}
			return true
		})
	}()
	for i := 0; i < p.count; i++ {
		b, _ := (&icmp.Message{Type: e.request, Body: &icmp.Echo{ID: id, Seq: i, Data: []byte("strait-health")}}).Marshal(nil)
		mu.Lock()
		sent[i] = time.Now()
		mu.Unlock()
		if _, err := conn.WriteTo(b, &net.IPAddr{IP: dst.AsSlice()}); err == nil {
			res.Sent++
		}
		if i < p.count-1 {
			select {
			case <-ctx.Done():
				conn.Close()
				<-done
				return res, ctx.Err()
			case <-time.After(p.interval):
			}
		}
	}
	_ = conn.SetReadDeadline(time.Now().Add(p.timeout))
	<-done
	if res.Received > 0 {
		res.RTT = total / time.Duration(res.Received)
	}
	return res, nil
}

// FirstReplier times when a path starts to carry traffic.
type FirstReplier interface {
	// FirstReply sends an echo request from src to dst every interval, without waiting
	// for the one before, and returns when the first answer to any of them arrived; an
	// error when ctx ends first.
	FirstReply(ctx context.Context, src, dst netip.Addr, every time.Duration) (time.Time, error)
}

// FirstReply implements FirstReplier: its precision is every, whatever the round trip.
func (p *ICMP) FirstReply(ctx context.Context, src, dst netip.Addr, every time.Duration) (time.Time, error) {
	if err := sameFamily(src, dst); err != nil {
		return time.Time{}, err
	}
	e := echoOf(dst)
	conn, err := p.listen(src)
	if err != nil {
		return time.Time{}, fmt.Errorf("icmp socket on %s: %w", src, err)
	}
	defer conn.Close() // ends the reader below
	id := int(p.seq.Add(1)&0xffff) ^ 0x5354
	answered := make(chan time.Time, 1)
	go readReplies(conn, e, dst, id, func(_ int, at time.Time) bool {
		answered <- at
		return false
	})
	tick := time.NewTicker(every)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		b, _ := (&icmp.Message{Type: e.request, Body: &icmp.Echo{ID: id, Seq: seq & 0xffff, Data: []byte("strait-failover")}}).Marshal(nil)
		_, _ = conn.WriteTo(b, &net.IPAddr{IP: dst.AsSlice()}) // a path not up yet refuses: try on
		select {
		case at := <-answered:
			return at, nil
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("no answer from %s: %w", dst, ctx.Err())
		case <-tick.C:
		}
	}
}

// readReplies hands each echo reply from dst to echo requests of id to reply, with its
// sequence number and when it arrived, until reply returns false or conn is closed.
func readReplies(conn *icmp.PacketConn, e echo, dst netip.Addr, id int, reply func(seq int, at time.Time) bool) {
	buf := make([]byte, 1500)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			return
		}
		at := time.Now()
		m, err := icmp.ParseMessage(e.protocol, buf[:n])
		if err != nil || m.Type != e.reply || from.String() != dst.Unmap().String() {
			continue
		}
		if e, ok := m.Body.(*icmp.Echo); ok && e.ID == id && !reply(e.Seq, at) {
			return
		}
	}
}

// sameFamily refuses a probe between families: no route carries it.
func sameFamily(src, dst netip.Addr) error {
	if src.Unmap().Is4() != dst.Unmap().Is4() {
		return fmt.Errorf("health check from %s to %s: the addresses are of different families", src, dst)
	}
	return nil
}
