package cabletest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/straitnet/strait/internal/netns"
)

// Ping sends one ICMP echo from namespace ns to dst and reports whether it was answered.
func Ping(ns string, dst netip.Addr) error {
	out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "1", dst.String()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ping %s from %s: %w: %s", dst, ns, err, out)
	}
	return nil
}

// PingSteady sends n ICMP echoes 100 ms apart from namespace ns to dst and reports
// whether every one was answered.
func PingSteady(ns string, dst netip.Addr, n int) error {
	out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-n", "-q", "-c", strconv.Itoa(n), "-i", "0.1",
		"-W", "1", dst.String()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ping %s from %s: %w: %s", dst, ns, err, out)
	}
	if !strings.Contains(string(out), " 0% packet loss") {
		return fmt.Errorf("ping %s from %s: not every echo answered: %s", dst, ns, out)
	}
	return nil
}

// pingEvery is how often PingGap sends an echo.
const pingEvery = 100 * time.Millisecond

// PingGap sends ICMP echoes from namespace ns to dst every 100 ms until one is answered
// or deadline passes, and returns the gap: from the first echo sent to the first one
// answered, by sequence number. It counts neither the time to start ping nor the
// round trip, which on a loaded machine and through a userspace cable (libipsec) can
// take longer than a lost packet would, so it tells a path that drops packets from
// one that is only slow.
func PingGap(ns string, dst netip.Addr, deadline time.Duration) (time.Duration, error) {
	out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-n", "-c", "1",
		"-i", strconv.FormatFloat(pingEvery.Seconds(), 'f', -1, 64),
		"-w", strconv.Itoa(int(deadline.Round(time.Second)/time.Second)), dst.String()).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("ping %s from %s: no answer within %v: %w: %s", dst, ns, deadline, err, out)
	}
	m := icmpSeq.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("ping %s from %s: no icmp_seq in its output: %s", dst, ns, out)
	}
	seq, _ := strconv.Atoi(string(m[1]))
	return time.Duration(seq-1) * pingEvery, nil
}

// icmpSeq is an answered echo in ping's output.
var icmpSeq = regexp.MustCompile(`bytes from [^ ]+ icmp_seq=(\d+)`)

// TCP opens a TCP connection from namespace fromNS to a listener in toNS on dst and
// checks that bytes make the round trip.
func TCP(ctx context.Context, fromNS, toNS string, dst netip.Addr) error {
	_, err := TCPSource(ctx, fromNS, toNS, dst)
	return err
}

// TCPSource is TCP that also returns the caller's address as the listener saw it.
func TCPSource(ctx context.Context, fromNS, toNS string, dst netip.Addr) (netip.Addr, error) {
	var ln net.Listener
	if err := netns.Do(toNS, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(dst.String(), "0"))
		return err
	}); err != nil {
		return netip.Addr{}, fmt.Errorf("listen in %s: %w", toNS, err)
	}
	defer func() { _ = ln.Close() }()
	seen := make(chan netip.Addr, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		seen <- c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
		defer func() { _ = c.Close() }()
		_, _ = io.Copy(c, c)
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	var conn net.Conn
	if err := netns.Do(fromNS, func() (err error) {
		d := net.Dialer{Timeout: 3 * time.Second}
		conn, err = d.DialContext(ctx, "tcp", net.JoinHostPort(dst.String(), strconv.Itoa(port)))
		return err
	}); err != nil {
		return netip.Addr{}, fmt.Errorf("dial %s from %s: %w", dst, fromNS, err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	msg := bytes.Repeat([]byte("strait "), 2000) // several segments
	go func() { _, _ = conn.Write(msg) }()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil {
		return netip.Addr{}, fmt.Errorf("echo from %s: %w", dst, err)
	}
	if !bytes.Equal(got, msg) {
		return netip.Addr{}, fmt.Errorf("echo from %s differs", dst)
	}
	return <-seen, nil
}

// PingSize sends one ICMP echo of exactly size bytes (IP header included) from namespace
// ns to dst with fragmentation prohibited, and reports whether it was answered: a packet
// larger than the path's MTU is refused (by the sender's route or by a router's ICMP
// "fragmentation needed" / "packet too big") instead of split.
func PingSize(ns string, dst netip.Addr, size int) error { return pingSize(ns, dst, size, "1") }

// pingSize is PingSize waiting wait seconds for the answer: ping waits that long even
// when an ICMP error has already refused the packet.
func pingSize(ns string, dst netip.Addr, size int, wait string) error {
	payload := size - 20 - 8
	if dst.Is6() {
		payload = size - 40 - 8
	}
	out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-c", "1", "-W", wait, "-M", "do",
		"-s", strconv.Itoa(payload), dst.String()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ping %s from %s with %d bytes, not fragmented: %w: %s", dst, ns, size, err, out)
	}
	return nil
}
