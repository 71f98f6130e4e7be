package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestAddrBindsInBothProtocols(t *testing.T) {
	addr := Addr(t)
	tl, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("TCP on %s: %v", addr, err)
	}
	defer tl.Close()
	ul, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatalf("UDP on %s: %v", addr, err)
	}
	defer ul.Close()
}

// TestPortSkipsAPortHeldInUDP: the first TCP port offered is one held in UDP (as by a
// DNS client's socket); Port must pass it by and return one free in both.
func TestPortSkipsAPortHeldInUDP(t *testing.T) {
	// A UDP port whose TCP twin is free: another test's process may hold the twin.
	var held net.PacketConn
	var first net.Listener
	for try := 0; try < 20 && first == nil; try++ {
		h, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", h.LocalAddr().String())
		if err != nil {
			_ = h.Close()
			continue
		}
		held, first = h, l
	}
	if first == nil {
		t.Fatal("no UDP port with its TCP twin free in 20 tries")
	}
	defer held.Close()
	offered := 0
	got, err := port(func() (net.Listener, error) {
		offered++
		if offered == 1 {
			return first, nil // free in TCP, taken in UDP
		}
		return net.Listen("tcp", "127.0.0.1:0")
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := held.LocalAddr().(*net.UDPAddr).Port; got == want {
		t.Fatalf("Port returned %d, which is held in UDP", got)
	}
	if offered < 2 {
		t.Fatalf("Port took the first port offered, held in UDP")
	}
	ul, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(got)))
	if err != nil {
		t.Fatalf("port %d is not free in UDP: %v", got, err)
	}
	_ = ul.Close()
}
