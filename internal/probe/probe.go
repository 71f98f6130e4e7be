package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Port is where a probe pod serves, TCP and UDP.
const Port = 4243

// Seen is what a Dial found: the source address the server saw, beside the address the
// connection left from; they differ when something on the way translated the source.
type Seen struct {
	Local string `json:"local"`
	Seen  string `json:"seen"`
}

// MTU is what PathMTU found: the largest datagram the kernel let leave with don't
// fragment set (the link's MTU, or a smaller path MTU an ICMP "fragmentation needed"
// taught it), whether one of that size was answered, and whether a small one was.
type MTU struct {
	PathMTU      int    `json:"pathMTU"`
	FullAnswered bool   `json:"fullAnswered"`
	Small        bool   `json:"smallAnswered"`
	Error        string `json:"error,omitempty"`
}

// Hello starts the datagram Dial sends before it connects: "hello NONCE". The server
// logs the source address each one arrived from (a line "seen NONCE ADDRESS"), so the
// source is known at the receiving end even when no answer finds its way back, as when
// a masquerade put a node's address there that the other cluster does not route back.
const Hello = "hello "

// Serve answers on addr (":4243") until ctx ends: a TCP connection gets the address it
// came from and is closed; a UDP datagram gets "N" back, its length, and a hello is
// logged to log with its source address.
func Serve(ctx context.Context, addr string, log io.Writer) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	pc, err := lc.ListenPacket(ctx, "udp", addr)
	if err != nil {
		return err
	}
	defer pc.Close()
	closeWhenDone(ctx, pc)
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if nonce, ok := strings.CutPrefix(string(buf[:n]), Hello); ok {
				host, _, _ := net.SplitHostPort(from.String())
				fmt.Fprintf(log, "seen %s %s\n", strings.TrimSpace(nonce), host)
			}
			_, _ = pc.WriteTo([]byte(strconv.Itoa(n)), from)
		}
	}()
	return acceptEach(ctx, ln, func(c net.Conn) {
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		_ = c.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = fmt.Fprintln(c, host)
		c.Close()
	})
}

// Dial sends a probe server hellos with nonce (three, a few milliseconds apart: UDP may
// lose one), then connects over TCP and reads the source address it saw.
func Dial(ctx context.Context, addr, nonce string, timeout time.Duration) (Seen, error) {
	if nonce != "" {
		if u, err := net.Dial("udp", addr); err == nil {
			for i := 0; i < 3; i++ {
				_, _ = u.Write([]byte(Hello + nonce))
				time.Sleep(20 * time.Millisecond)
			}
			u.Close()
		}
	}
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Seen{}, err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return Seen{}, fmt.Errorf("reading what %s saw: %w", addr, err)
	}
	local, _, _ := net.SplitHostPort(c.LocalAddr().String())
	return Seen{Local: local, Seen: strings.TrimSpace(line)}, nil
}

// The IP and UDP headers a datagram of the path MTU leaves room for: IPv4's 20 bytes
// and UDP's 8, IPv6's 40 and UDP's 8. IPv6 routers never fragment: a datagram that
// does not fit is dropped with an ICMPv6 "packet too big", or silently.
const (
	udpIPv4Overhead = 28
	udpIPv6Overhead = 48
)

// UDPOverhead is what the IP and UDP headers of a datagram to addr take of the path MTU.
func UDPOverhead(addr netip.Addr) int {
	if addr.Is4() || addr.Is4In6() {
		return udpIPv4Overhead
	}
	return udpIPv6Overhead
}

// PathMTU sends datagrams with don't fragment set to a probe server: a small one, then
// one as large as the kernel lets leave (each "message too long" means an ICMP lowered
// the path MTU, and the next try is that size). A full-sized datagram that goes unanswered
// while a small one is answered is a black hole: packets of that size vanish on the way
// and no ICMP says so. The server's family is the family probed: an IPv6 address is
// probed with IPv6's headers and its own path MTU (IPV6_MTU).
func PathMTU(ctx context.Context, addr string, timeout time.Duration) MTU {
	var out MTU
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	network, level, discover, probeMTU, mtuOpt := "udp4", unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO, unix.IP_MTU
	if ap.Addr().Is6() {
		network, level, discover, probeMTU, mtuOpt = "udp6", unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO, unix.IPV6_MTU
	}
	c, err := net.DialUDP(network, nil, net.UDPAddrFromAddrPort(ap))
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer c.Close()
	raw, err := c.SyscallConn()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	var sockErr error
	if err := raw.Control(func(fd uintptr) {
		sockErr = unix.SetsockoptInt(int(fd), level, discover, probeMTU)
	}); err != nil || sockErr != nil {
		out.Error = fmt.Sprintf("setting don't fragment: %v", errors.Join(err, sockErr))
		return out
	}
	pathMTU := func() int {
		mtu := 0
		_ = raw.Control(func(fd uintptr) { mtu, _ = unix.GetsockoptInt(int(fd), level, mtuOpt) })
		return mtu
	}
	// Nothing crosses at all: no size to tell (and no seconds spent on full-sized tries).
	if out.Small, _ = echo(c, 64, timeout); !out.Small {
		return out
	}
	for try := 0; try < 6 && ctx.Err() == nil; try++ {
		out.PathMTU = pathMTU()
		ok, err := echo(c, out.PathMTU-UDPOverhead(ap.Addr()), timeout)
		if errors.Is(err, syscall.EMSGSIZE) {
			continue // an ICMP taught the kernel a smaller path MTU: try that
		}
		out.FullAnswered = ok
		break
	}
	return out
}

// echo sends one datagram of size bytes up to three times and says whether the server
// answered with its length.
func echo(c *net.UDPConn, size int, timeout time.Duration) (bool, error) {
	if size < 1 {
		return false, fmt.Errorf("datagram of %d bytes", size)
	}
	payload := make([]byte, size)
	buf := make([]byte, 32)
	for i := 0; i < 3; i++ {
		if _, err := c.Write(payload); err != nil {
			return false, err
		}
		_ = c.SetReadDeadline(time.Now().Add(timeout))
		n, err := c.Read(buf)
		if err == nil && string(buf[:n]) == strconv.Itoa(size) {
			return true, nil
		}
	}
	return false, nil
}

// Lookup resolves name with the resolver of the pod (its /etc/resolv.conf: the
// cluster's DNS) and returns the addresses.
func Lookup(ctx context.Context, name string) ([]string, error) {
	return net.DefaultResolver.LookupHost(ctx, name)
}

// SeenIn reads a probe server's log: the source address every hello arrived from, by
// nonce.
func SeenIn(log string) map[string][]string {
	out := map[string][]string{}
	for _, line := range strings.Split(log, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "seen" && !slices.Contains(out[f[1]], f[2]) {
			out[f[1]] = append(out[f[1]], f[2])
		}
	}
	return out
}

// Watch is what Watching saw: how many connections were tried and answered, and the
// longest time without an answer, from the start to the end.
type Watch struct {
	Tries      int   `json:"tries"`
	Answers    int   `json:"answers"`
	LongestGap int64 `json:"longestGapMillis"`
	// Kept says whether every answer named the dialling pod's own address.
	Kept bool `json:"sourceKept"`
}

// Watching connects to a probe server every interval for a while, each try given up
// after timeout, and measures the longest time without an answer.
func Watching(ctx context.Context, addr string, total, every, timeout time.Duration) Watch {
	w := Watch{Kept: true}
	start := time.Now()
	last := start
	for time.Since(start) < total && ctx.Err() == nil {
		w.Tries++
		s, err := Dial(ctx, addr, "", timeout)
		if err == nil {
			w.Answers++
			w.LongestGap = max(w.LongestGap, time.Since(last).Milliseconds())
			last = time.Now()
			if s.Seen != s.Local {
				w.Kept = false
			}
		}
		time.Sleep(every)
	}
	w.LongestGap = max(w.LongestGap, time.Since(last).Milliseconds())
	return w
}

// closeWhenDone closes each of cs when ctx ends: a server's listeners, so that its
// accept and read loops return.
func closeWhenDone(ctx context.Context, cs ...io.Closer) {
	context.AfterFunc(ctx, func() {
		for _, c := range cs {
			c.Close()
		}
	})
}

// acceptEach hands each connection ln accepts to handle until ctx ends (nil), which
// closes ln, or Accept fails (its error).
func acceptEach(ctx context.Context, ln net.Listener, handle func(net.Conn)) error {
	closeWhenDone(ctx, ln)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		handle(c)
	}
}
