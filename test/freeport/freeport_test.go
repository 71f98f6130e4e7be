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
	held, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldAddr := held.LocalAddr().String()
	offered := 0
	got, err := port(func() (net.Listener, error) {
		offered++
		if offered == 1 {
			return net.Listen("tcp", heldAddr) // free in TCP, taken in UDP
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
