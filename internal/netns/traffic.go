package netns

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
)

// Ping sends one ICMP echo request from inside the namespace to dst and waits up to
// timeout for the reply; it returns the round-trip time.
func (n *NS) Ping(dst netip.Addr, timeout time.Duration) (time.Duration, error) {
	var conn *icmp.PacketConn
	if err := n.Do(func() error {
		var err error
		conn, err = icmp.ListenPacket("ip4:icmp", "0.0.0.0")
		return err
	}); err != nil {
		return 0, fmt.Errorf("%s: icmp socket: %w", n.Name, err)
	}
	defer conn.Close()
	id := os.Getpid() & 0xffff
	seq := int(time.Now().UnixNano() & 0x7fff)
	msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("strait")}}
	b, err := msg.Marshal(nil)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if _, err := conn.WriteTo(b, &net.IPAddr{IP: dst.AsSlice()}); err != nil {
		return 0, fmt.Errorf("%s: ping %s: %w", n.Name, dst, err)
	}
	_ = conn.SetReadDeadline(start.Add(timeout))
	buf := make([]byte, 1500)
	for {
		nr, peer, err := conn.ReadFrom(buf)
		if err != nil {
			return 0, fmt.Errorf("%s: ping %s: %w", n.Name, dst, err)
		}
		rm, err := icmp.ParseMessage(1, buf[:nr])
		if err != nil || rm.Type != ipv4.ICMPTypeEchoReply {
			continue
		}
		if e, ok := rm.Body.(*icmp.Echo); ok && e.ID == id && e.Seq == seq && peer.String() == dst.String() {
			return time.Since(start), nil
		}
	}
}

// EchoServer is a TCP server inside a namespace that answers every line with the
// address the connection came from and the address it was accepted on, so a test sees
// the source after SNAT and the endpoint after DNAT.
type EchoServer struct {
	ln net.Listener
	wg sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]bool
	done  bool
}

// ServeEcho starts an EchoServer on addr ("ip:port") in the namespace, stopped at the
// end of the test.
func (n *NS) ServeEcho(t TB, addr string) *EchoServer {
	t.Helper()
	s := &EchoServer{}
	if err := n.Do(func() error {
		var err error
		s.ln, err = net.Listen("tcp4", addr)
		return err
	}); err != nil {
		t.Fatalf("%s: listen %s: %v", n.Name, addr, err)
	}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(s.stop)
	return s
}

// stop closes the listener and every open connection, then waits for the handlers: a
// client that never closes its end (its namespace went first, so no FIN ever comes)
// must not keep the test waiting.
func (s *EchoServer) stop() {
	_ = s.ln.Close()
	s.mu.Lock()
	s.done = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// track records an accepted connection, or closes it when the server is stopping.
func (s *EchoServer) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		_ = c.Close()
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]bool{}
	}
	s.conns[c] = true
	return true
}

func (s *EchoServer) untrack(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
	_ = c.Close()
}

func (s *EchoServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		if !s.track(c) {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			r := bufio.NewReader(c)
			for {
				if _, err := r.ReadString('\n'); err != nil {
					return
				}
				host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
				local, _, _ := net.SplitHostPort(c.LocalAddr().String())
				if _, err := fmt.Fprintln(c, host, local); err != nil {
					return
				}
			}
		}()
	}
}

// Dial opens a TCP connection from inside the namespace.
func (n *NS) Dial(ctx context.Context, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.Do(func() error {
		var err error
		d := net.Dialer{}
		c, err = d.DialContext(ctx, "tcp4", addr)
		return err
	})
	return c, err
}

// WhoAmI connects to an EchoServer at addr and returns the source address the server
// saw.
func (n *NS) WhoAmI(addr string, timeout time.Duration) (string, error) {
	src, _, err := n.Exchange(addr, timeout)
	return src, err
}

// Exchange connects to an EchoServer at addr and returns the source address the server
// saw and the server's own address.
func (n *NS) Exchange(addr string, timeout time.Duration) (src, server string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := n.Dial(ctx, addr)
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	line, err := Ask(c, timeout)
	src, server, _ = strings.Cut(line, " ")
	return src, server, err
}

// Ask sends one line on an EchoServer connection and returns the answer line
// ("<source seen> <server address>").
func Ask(c net.Conn, timeout time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintln(c, "who"); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// UDPReaches sends one datagram from inside the namespace to addr ("ip:port", IPv4 or
// "[ip]:port" IPv6), where a socket in to listens, and says whether it arrived within
// timeout.
func (n *NS) UDPReaches(t TB, to *NS, addr string, timeout time.Duration) bool {
	t.Helper()
	var l net.PacketConn
	if err := to.Do(func() error {
		var err error
		l, err = net.ListenPacket("udp", addr)
		return err
	}); err != nil {
		t.Fatalf("listening on udp %s in %s: %v", addr, to.Name, err)
	}
	defer l.Close()
	var c net.Conn
	if err := n.Do(func() error {
		var err error
		c, err = net.Dial("udp", addr)
		return err
	}); err != nil {
		t.Fatalf("udp to %s from %s: %v", addr, n.Name, err)
	}
	defer c.Close()
	// A drop in the sender's output hook fails the write (EPERM): it did not arrive.
	if _, err := c.Write([]byte("strait")); err != nil {
		return false
	}
	_ = l.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 16)
	_, _, err := l.ReadFrom(buf)
	return err == nil
}

// ForwardIn accepts TCP on addr inside the namespace and splices every connection to
// target, dialled from the caller's own namespace: a process that runs wholly inside the
// namespace (wireguard-go needs that) reaches an API server on the host's loopback at
// the same address. It stops at the end of the test.
func (n *NS) ForwardIn(t TB, addr, target string) {
	t.Helper()
	var ln net.Listener
	if err := n.Do(func() error {
		var err error
		ln, err = net.Listen("tcp4", addr)
		return err
	}); err != nil {
		t.Fatalf("%s: listen %s: %v", n.Name, addr, err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	open := map[net.Conn]bool{}
	done := false
	track := func(cs ...net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			if done {
				_ = c.Close()
				continue
			}
			open[c] = true
		}
		return !done
	}
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				out, err := net.Dial("tcp4", target)
				if err != nil {
					_ = in.Close()
					return
				}
				if !track(in, out) {
					return
				}
				copied := make(chan struct{}, 2)
				splice := func(dst, src net.Conn) {
					_, _ = io.Copy(dst, src)
					copied <- struct{}{}
				}
				go splice(out, in)
				go splice(in, out)
				<-copied
				mu.Lock()
				delete(open, in)
				delete(open, out)
				mu.Unlock()
				_ = in.Close()
				_ = out.Close()
				<-copied
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		done = true
		for c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}
