package wireguard

import (
	"net"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// When the device keeps the endpoint WireGuard roamed to, and when it takes the Peer's.
func TestRoamedEndpointIsKeptOnlyWhileThePeerIsStale(t *testing.T) {
	now := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	set := now.Add(-time.Minute)
	a, b, c := "192.0.2.1:4500", "192.0.2.2:4500", "192.0.2.3:4500"
	a6, b6 := "[fd73:18::1]:4500", "[fd73:18::2]:4500"
	udp := func(s string) *net.UDPAddr { u, _ := net.ResolveUDPAddr("udp", s); return u }
	for _, tc := range []struct {
		name       string
		configured *configuredEndpoint // nil: after an agent restart
		device     string
		handshake  time.Time
		peer       string
		want       bool
	}{
		{"the hub is down: the remote failed over and the cable followed it", &configuredEndpoint{addr: a, at: set}, b, now.Add(-5 * time.Second), a, true},
		{"the same after an agent restart (nothing remembered)", nil, b, now.Add(-5 * time.Second), a, true},
		{"the hub names a new endpoint: follow it", &configuredEndpoint{addr: a, at: set}, b, now.Add(-5 * time.Second), c, false},
		{"a gateway that handed over sent a last packet: not kept", &configuredEndpoint{addr: a, at: set, left: []string{b}}, b, set.Add(time.Second), a, false},
		{"the remote failed back to a gateway the hub had left, the hub down: kept", &configuredEndpoint{addr: a, at: set, left: []string{b}}, b, now.Add(-5 * time.Second), a, true},
		{"no handshake since the endpoint was set", &configuredEndpoint{addr: a, at: set}, b, set.Add(-time.Second), a, false},
		{"the session is dead", &configuredEndpoint{addr: a, at: now.Add(-time.Hour)}, b, now.Add(-rejectAfter - time.Second), a, false},
		{"no handshake ever", &configuredEndpoint{addr: a, at: set}, b, time.Time{}, a, false},
		{"the device is where the Peer says", &configuredEndpoint{addr: a, at: set}, a, now, a, false},
		{"an IPv6 remote failed over, the hub down: kept", &configuredEndpoint{addr: a6, at: set}, b6, now.Add(-5 * time.Second), a6, true},
		{"the Peer moved to IPv6, a last packet came over IPv4: not kept", &configuredEndpoint{addr: a6, at: set}, a, now.Add(-5 * time.Second), a6, false},
		{"the Peer moved to IPv4, a last packet came over IPv6: not kept", &configuredEndpoint{addr: a, at: set}, a6, now.Add(-5 * time.Second), a, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := wgtypes.Key{1}
			d := &Driver{configured: map[wgtypes.Key]configuredEndpoint{}}
			if tc.configured != nil {
				d.configured[key] = *tc.configured
			}
			p := wgtypes.Peer{PublicKey: key, Endpoint: udp(tc.device), LastHandshakeTime: tc.handshake}
			if got := d.roamed(p, wgtypes.PeerConfig{PublicKey: key, Endpoint: udp(tc.peer)}, now); got != tc.want {
				t.Errorf("roamed = %v, want %v", got, tc.want)
			}
		})
	}
}
