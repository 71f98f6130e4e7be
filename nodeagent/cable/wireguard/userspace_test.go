package wireguard

import (
	"fmt"
	"slices"
	"testing"

	"golang.zx2c4.com/wireguard/conn"
)

// TestWorthLogging: wireguard-go reports a disabled UDP GSO or a refused handshake only
// as a verbose message; the agent's log gets those, and the per-handshake noise goes to
// its debug level.
func TestWorthLogging(t *testing.T) {
	var got, debug []string
	verbosef := worthLogging(func(format string, args ...any) { got = append(got, fmt.Sprintf(format, args...)) },
		func(format string, args ...any) { debug = append(debug, fmt.Sprintf(format, args...)) })
	verbosef("%v - Sending keepalive packet", "peer(abc)")
	verbosef("Routine: TUN reader - started")
	verbosef("%v - Received handshake initiation", "peer(abc)")
	gso := conn.ErrUDPGSODisabled{}
	verbosef(gso.Error())
	verbosef("%v - ConsumeMessageInitiation: handshake replay @ %v", "peer(abc)", "4000000069a1")
	verbosef("%v - ConsumeMessageInitiation: handshake flood", "peer(abc)")
	verbosef("Received invalid initiation message from %s", "192.0.2.12:51871")
	want := []string{
		"wireguard-go: " + gso.Error(),
		"wireguard-go: peer(abc) - ConsumeMessageInitiation: handshake replay @ 4000000069a1",
		"wireguard-go: peer(abc) - ConsumeMessageInitiation: handshake flood",
		"wireguard-go: Received invalid initiation message from 192.0.2.12:51871",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("logged %q, want %q", got, want)
	}
	wantDebug := []string{
		"wireguard-go: peer(abc) - Sending keepalive packet",
		"wireguard-go: Routine: TUN reader - started",
		"wireguard-go: peer(abc) - Received handshake initiation",
	}
	if !slices.Equal(debug, wantDebug) {
		t.Fatalf("debug got %q, want %q", debug, wantDebug)
	}
}
