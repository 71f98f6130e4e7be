package freeport

import (
	"net"
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

func TestPortSkipsAPortHeldInUDP(t *testing.T) {
	// Hold many UDP ports; every port returned must still bind in UDP.
	var held []net.PacketConn
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	for range 200 {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for range 20 {
		addr := Addr(t)
		ul, err := net.ListenPacket("udp", addr)
		if err != nil {
			t.Fatalf("Addr returned %s, which is held in UDP: %v", addr, err)
		}
		_ = ul.Close()
	}
}
