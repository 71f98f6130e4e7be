package freeport

import (
	"fmt"
	"net"
	"strconv"
)

// attempts bounds the search: a port the kernel hands out for TCP is rarely taken in UDP.
const attempts = 50

// Port returns a loopback port free in both TCP and UDP right now.
func Port() (int, error) {
	return port(func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") })
}

// port tries the TCP listeners listen hands out until one's port is also free in UDP.
func port(listen func() (net.Listener, error)) (int, error) {
	var lastErr error
	for range attempts {
		tl, err := listen()
		if err != nil {
			return 0, fmt.Errorf("listen on a free loopback TCP port: %w", err)
		}
		port := tl.Addr().(*net.TCPAddr).Port
		ul, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		_ = tl.Close()
		if err != nil {
			lastErr = err
			continue
		}
		_ = ul.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no loopback port free in both TCP and UDP after %d tries: %w", attempts, lastErr)
}

// TB is the part of testing.TB that Addr needs.
type TB interface {
	Helper()
	Fatal(args ...any)
}

// Addr returns "127.0.0.1:<port>" for a port free in both TCP and UDP, and fails the
// test when there is none.
func Addr(t TB) string {
	t.Helper()
	port, err := Port()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
