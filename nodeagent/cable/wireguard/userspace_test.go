package wireguard

import (
	"fmt"
	"slices"
	"testing"

	"golang.zx2c4.com/wireguard/conn"
)

// TestOffloadWarningsReachTheLog: wireguard-go reports a disabled UDP GSO only as a
// verbose message; the agent's log gets that one and none of the per-handshake noise.
func TestWorthLogging(t *testing.T) {
	var got []string
	verbosef := worthLogging(func(format string, args ...any) { got = append(got, fmt.Sprintf(format, args...)) })
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
}
