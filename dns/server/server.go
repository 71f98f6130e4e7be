package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/straitnet/strait/dns/resolver"
)

// DefaultUDPSize is the EDNS0 buffer size advertised and the most a UDP answer is
// allowed to take (the DNS flag day 2020 value, safe from IP fragmentation).
const DefaultUDPSize = 1232

// Options of a Server.
type Options struct {
	// Addr to listen on, UDP and TCP, e.g. ":53" or "127.0.0.1:5353".
	Addr string
	// UDPSockets is the number of UDP sockets bound to Addr with SO_REUSEPORT, so that
	// the kernel spreads questions over them; 0 or 1 is one socket.
	UDPSockets int
	// UDPSize caps the EDNS0 buffer size a client may ask for; 0 is DefaultUDPSize.
	UDPSize uint16
}

// Server answers DNS questions from the snapshot in Current: over TCP with miekg/dns's
// server, over UDP with udpLoop.
type Server struct {
	opts    Options
	current resolver.Current
	metrics *Metrics
	now     func() time.Time
	// msgs and bufs are reused answers and packing buffers, so that a question costs
	// fewer allocations (and the garbage collector fewer cycles).
	msgs sync.Pool
	bufs sync.Pool
}

// New creates a server; it answers SERVFAIL until the first Publish.
func New(opts Options, metrics *Metrics) *Server {
	if opts.UDPSize == 0 {
		opts.UDPSize = DefaultUDPSize
	}
	s := &Server{opts: opts, metrics: metrics, now: time.Now}
	s.msgs.New = func() any { return new(dns.Msg) }
	s.bufs.New = func() any {
		b := make([]byte, 0, int(opts.UDPSize)+1)
		return &b
	}
	return s
}

// Publish swaps in the snapshot to answer from.
func (s *Server) Publish(snap *resolver.Snapshot) {
	s.current.Store(snap)
	if s.metrics != nil {
		s.metrics.snapshot(snap)
	}
}

// Snapshot is the snapshot being served, nil before the first Publish.
func (s *Server) Snapshot() *resolver.Snapshot { return s.current.Load() }

// ServeDNS answers one message (TCP, and UDP in tests; the UDP sockets of Run are
// served by udpLoop).
func (s *Server) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := s.reply(r, isTCP(w))
	// What WriteMsg does (no TSIG is configured), packing into a reused buffer.
	bp := s.bufs.Get().(*[]byte)
	if out, err := m.PackBuffer((*bp)[:cap(*bp)]); err == nil {
		_, _ = w.Write(out)
	}
	s.bufs.Put(bp)
	s.release(m)
}

// reply is the answer to r, counted in the metrics; release gives it back once sent.
func (s *Server) reply(r *dns.Msg, tcp bool) *dns.Msg {
	start := s.now()
	m := s.answer(r, tcp)
	// Count before writing: a client that has its answer can read the metric.
	if s.metrics != nil {
		var qtype uint16
		if len(r.Question) > 0 {
			qtype = r.Question[0].Qtype
		}
		s.metrics.observe(qtype, m.Rcode, start, s.now())
	}
	return m
}

// release takes back a message reply made, once it is packed.
func (s *Server) release(m *dns.Msg) {
	*m = dns.Msg{}
	s.msgs.Put(m)
}

func (s *Server) answer(r *dns.Msg, tcp bool) *dns.Msg {
	m := s.msgs.Get().(*dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = false
	opt := r.IsEdns0()
	switch {
	case r.Opcode != dns.OpcodeQuery:
		m.Rcode = dns.RcodeNotImplemented
	case len(r.Question) != 1:
		m.Rcode = dns.RcodeFormatError
	case opt != nil && opt.Version() != 0:
		m.Rcode = dns.RcodeBadVers
	case r.Question[0].Qclass != dns.ClassINET && r.Question[0].Qclass != dns.ClassANY:
		m.Rcode = dns.RcodeRefused
	default:
		snap := s.current.Load()
		if snap == nil {
			m.Rcode = dns.RcodeServerFailure
			break
		}
		q := r.Question[0]
		a := snap.Resolve(q.Name, q.Qtype)
		m.Rcode, m.Answer, m.Ns, m.Extra = a.Rcode, a.Answer, a.Ns, a.Extra
		m.Authoritative = a.Rcode != dns.RcodeRefused
	}
	size := dns.MinMsgSize
	if opt != nil {
		size = int(min(max(opt.UDPSize(), dns.MinMsgSize), s.opts.UDPSize))
		m.SetEdns0(s.opts.UDPSize, false)
	}
	if tcp {
		size = dns.MaxMsgSize
	}
	m.Compress = true
	m.Truncate(size)
	return m
}

func isTCP(w dns.ResponseWriter) bool {
	_, ok := w.RemoteAddr().(*net.TCPAddr)
	return ok
}

// Run listens on Addr over UDP and TCP and serves until ctx is done. ready, when not
// nil, is called with the bound UDP and TCP addresses once every socket listens.
func (s *Server) Run(ctx context.Context, ready func(udp, tcp net.Addr)) error {
	n := max(s.opts.UDPSockets, 1)
	lc := net.ListenConfig{Control: reusePort}
	tl, err := lc.Listen(ctx, "tcp", s.opts.Addr)
	if err != nil {
		return fmt.Errorf("listening on tcp %s: %w", s.opts.Addr, err)
	}
	var loops []*udpLoop
	closeUDP := func() {
		for _, l := range loops {
			_ = l.conn.Close()
		}
	}
	// With port 0, every UDP socket takes the port TCP got.
	udpAddr := net.JoinHostPort(hostOf(s.opts.Addr), strconv.Itoa(tl.Addr().(*net.TCPAddr).Port))
	for range n {
		pc, err := lc.ListenPacket(ctx, "udp", udpAddr)
		if err == nil {
			var l *udpLoop
			if l, err = newUDPLoop(s, pc.(*net.UDPConn)); err == nil {
				loops = append(loops, l)
				continue
			}
			_ = pc.Close()
		}
		_ = tl.Close()
		closeUDP()
		return fmt.Errorf("listening on udp %s: %w", udpAddr, err)
	}
	tcp := &dns.Server{Listener: tl, Handler: s, ReadTimeout: 5 * time.Second}
	errs := make(chan error, len(loops)+1)
	started := make(chan struct{}, 1)
	tcp.NotifyStartedFunc = func() { started <- struct{}{} }
	go func() { errs <- tcp.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-errs:
		closeUDP()
		return fmt.Errorf("starting dns server: %w", err)
	}
	for _, l := range loops {
		go func() { errs <- l.serve() }()
	}
	if ready != nil {
		ready(loops[0].conn.LocalAddr(), tl.Addr())
	}
	var stopErr error
	running := len(loops) + 1
	select {
	case <-ctx.Done():
	case err := <-errs:
		running--
		stopErr = fmt.Errorf("dns server stopped: %w", err)
		if err == nil {
			stopErr = errors.New("dns server stopped")
		}
	}
	_ = tcp.Shutdown()
	closeUDP()
	for range running {
		<-errs
	}
	return stopErr
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

func reusePort(_, _ string, c syscall.RawConn) error {
	var opErr error
	if err := c.Control(func(fd uintptr) {
		opErr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	if opErr != nil {
		return errors.Join(errors.New("setting SO_REUSEPORT"), opErr)
	}
	return nil
}
