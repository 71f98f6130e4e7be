package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// udpBatch is the most datagrams read (recvmmsg) or written (sendmmsg) in one system
// call.
const udpBatch = 64

// batchConn reads and writes batches of datagrams: an ipv4.PacketConn or an
// ipv6.PacketConn (their Message types are one type).
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// udpLoop answers the questions arriving on one UDP socket, in the goroutine that reads
// them: a batch of datagrams per system call, each answered, the answers sent back in one
// system call, each from the address its question was sent to. miekg/dns's server
// spends a goroutine, a session and several allocations per datagram, and two system
// calls; this does what it does (the same header checks and FORMERR/NOTIMP replies) with
// the answer's own allocations only.
type udpLoop struct {
	s    *Server
	conn *net.UDPConn
	pc   batchConn
	// in are the read slots; out the answers of one batch, their buffers in outBufs.
	in, out []ipv4.Message
	outBufs [][]byte
	// lastOOB and lastSrc memoize source: nearly every datagram on a socket is sent to
	// the same address.
	lastOOB, lastSrc []byte
	// req is the question being answered, reused.
	req dns.Msg
	// cm4 and cm6 parse the destination of a datagram, reused; v6 says the socket is
	// IPv6 (dual-stack), where either family's may come.
	cm4 ipv4.ControlMessage
	cm6 ipv6.ControlMessage
	v6  bool
}

// oobSize is the room the destination-address control message of either family needs.
func oobSize() int {
	return max(len(ipv4.NewControlMessage(ipv4.FlagDst|ipv4.FlagInterface)), len(ipv6.NewControlMessage(ipv6.FlagDst|ipv6.FlagInterface)))
}

func newUDPLoop(s *Server, conn *net.UDPConn) (*udpLoop, error) {
	// Ask for each datagram's destination, to answer from it on a wildcard address
	// (what miekg/dns does): either family may fail, not both.
	err6 := ipv6.NewPacketConn(conn).SetControlMessage(ipv6.FlagDst|ipv6.FlagInterface, true)
	err4 := ipv4.NewPacketConn(conn).SetControlMessage(ipv4.FlagDst|ipv4.FlagInterface, true)
	if err6 != nil && err4 != nil {
		return nil, err4
	}
	l := &udpLoop{s: s, conn: conn, in: make([]ipv4.Message, udpBatch), out: make([]ipv4.Message, udpBatch),
		outBufs: make([][]byte, udpBatch)}
	if a, ok := conn.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() != nil {
		l.pc = ipv4.NewPacketConn(conn)
	} else {
		l.pc, l.v6 = ipv6.NewPacketConn(conn), true
	}
	size, oob := int(s.opts.UDPSize), oobSize()
	for i := range l.in {
		l.in[i].Buffers = [][]byte{make([]byte, size)}
		l.in[i].OOB = make([]byte, oob)
		l.out[i].Buffers = make([][]byte, 1)
		l.outBufs[i] = make([]byte, 0, size+1)
	}
	l.cm4.Dst, l.cm6.Dst = make(net.IP, net.IPv4len), make(net.IP, net.IPv6len)
	return l, nil
}

// serve answers until the socket is closed.
func (l *udpLoop) serve() error {
	for {
		n, err := l.pc.ReadBatch(l.in, 0)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			// As miekg/dns's server: go on after a temporary error (EINTR, EAGAIN...).
			var t interface{ Temporary() bool }
			if errors.As(err, &t) && t.Temporary() {
				continue
			}
			return err
		}
		k := 0
		for i := range l.in[:n] {
			m := &l.in[i]
			reply := l.answer(m.Buffers[0][:m.N], l.outBufs[k][:0])
			if reply == nil {
				continue
			}
			o := &l.out[k]
			o.Buffers[0], o.OOB, o.Addr = reply, l.source(m.OOB[:m.NN]), m.Addr
			k++
		}
		l.send(l.out[:k])
	}
}

// send writes the batch's answers; one that cannot be sent is dropped, as a lost
// datagram would be.
func (l *udpLoop) send(out []ipv4.Message) {
	for len(out) > 0 {
		k, err := l.pc.WriteBatch(out, 0)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			k = max(k, 1)
		}
		out = out[k:]
	}
}

// answer is the datagram to send back for the datagram b, packed into dst; nil for none.
// It does what miekg/dns's server does before and after calling its handler: no answer
// to a datagram shorter than a header or to a response, FORMERR for a question it cannot
// parse or with unexpected section counts, NOTIMP for opcodes other than QUERY and
// NOTIFY.
func (l *udpLoop) answer(b, dst []byte) []byte {
	const headerSize = 12
	if len(b) < headerSize {
		return nil
	}
	dh := dns.Header{Id: binary.BigEndian.Uint16(b), Bits: binary.BigEndian.Uint16(b[2:]),
		Qdcount: binary.BigEndian.Uint16(b[4:]), Ancount: binary.BigEndian.Uint16(b[6:]),
		Nscount: binary.BigEndian.Uint16(b[8:]), Arcount: binary.BigEndian.Uint16(b[10:])}
	req := &l.req
	*req = dns.Msg{}
	action := dns.DefaultMsgAcceptFunc(dh)
	switch action {
	case dns.MsgIgnore:
		return nil
	case dns.MsgAccept:
		if err := req.Unpack(b); err == nil {
			m := l.s.reply(req, false)
			out, err := m.PackBuffer(dst[:cap(dst)])
			l.s.release(m)
			if err != nil {
				return nil
			}
			return out
		}
	default:
		// The header alone, as miekg/dns has it when it rejects a message.
		var hdr [headerSize]byte
		copy(hdr[:4], b)
		if err := req.Unpack(hdr[:]); err != nil {
			return nil
		}
	}
	opcode := req.Opcode
	req.SetRcodeFormatError(req)
	req.Zero = false
	if action == dns.MsgRejectNotImplemented {
		req.Opcode, req.Rcode = opcode, dns.RcodeNotImplemented
	}
	req.Ns, req.Answer, req.Extra = nil, nil, nil
	out, err := req.PackBuffer(dst[:cap(dst)])
	if err != nil {
		return nil
	}
	return out
}

// source is the control message that makes the answer leave from the address the
// datagram with control message oob was sent to; nil when oob does not tell it. The
// result is not to be changed.
func (l *udpLoop) source(oob []byte) []byte {
	if l.lastOOB != nil && bytes.Equal(oob, l.lastOOB) {
		return l.lastSrc
	}
	src := l.parseSource(oob)
	l.lastOOB, l.lastSrc = append(l.lastOOB[:0], oob...), src
	return src
}

func (l *udpLoop) parseSource(oob []byte) []byte {
	var ip net.IP
	// Parsing sets IfIndex with the destination: -1 tells it found none.
	if l.v6 {
		if l.cm6.IfIndex = -1; l.cm6.Parse(oob) == nil && l.cm6.IfIndex != -1 {
			ip = l.cm6.Dst
		}
	}
	if l.cm4.IfIndex = -1; ip == nil && l.cm4.Parse(oob) == nil && l.cm4.IfIndex != -1 {
		ip = l.cm4.Dst
	}
	if ip == nil {
		return nil
	}
	// IPv4 (mapped too) takes IPv4's control message, IPv6 IPv6's.
	if ip.To4() == nil {
		return (&ipv6.ControlMessage{Src: ip}).Marshal()
	}
	return (&ipv4.ControlMessage{Src: ip}).Marshal()
}
