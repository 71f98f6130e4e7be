package wireguard

import (
	"fmt"
	"testing"

	"golang.zx2c4.com/wireguard/conn"
)

// TestOffloadWarningsReachTheLog: wireguard-go reports a disabled UDP GSO only as a
// verbose message; the agent's log gets that one and none of the per-handshake noise.
func TestOffloadWarningsReachTheLog(t *testing.T) {
	var got []string
	verbosef := offloadWarnings(func(format string, args ...any) { got = append(got, fmt.Sprintf(format, args...)) })
	verbosef("%v - Sending keepalive packet", "peer(abc)")
	verbosef("Routine: TUN reader - started")
	gso := conn.ErrUDPGSODisabled{}
	verbosef(gso.Error())
	if len(got) != 1 || got[0] != "wireguard-go: "+gso.Error() {
		t.Fatalf("logged %q, want only the GSO warning", got)
	}
}
