package cabletest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"time"

	"github.com/straitnet/strait/test/netns"
)

// Ping sends one ICMP echo from namespace ns to dst and reports whether it was answered.
func Ping(ns string, dst netip.Addr) error {
	out, err := exec.Command("ip", "netns", "exec", ns, "ping", "-c", "1", "-W", "1", dst.String()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ping %s from %s: %w: %s", dst, ns, err, out)
	}
	return nil
}

// TCP opens a TCP connection from namespace fromNS to a listener in toNS on dst and
// checks that bytes make the round trip.
func TCP(ctx context.Context, fromNS, toNS string, dst netip.Addr) error {
	var ln net.Listener
	if err := netns.Do(toNS, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(dst.String(), "0"))
		return err
	}); err != nil {
		return fmt.Errorf("listen in %s: %w", toNS, err)
	}
	defer func() { _ = ln.Close() }()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
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
		return fmt.Errorf("dial %s from %s: %w", dst, fromNS, err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	msg := bytes.Repeat([]byte("strait "), 2000) // several segments
	go func() { _, _ = conn.Write(msg) }()
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil {
		return fmt.Errorf("echo from %s: %w", dst, err)
	}
	if !bytes.Equal(got, msg) {
		return fmt.Errorf("echo from %s differs", dst)
	}
	return nil
}
