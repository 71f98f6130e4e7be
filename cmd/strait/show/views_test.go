package show

import (
	"testing"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

func TestAdvertisedEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		ep   straitv1.PeerEndpoint
		want string
	}{
		{"an address", straitv1.PeerEndpoint{IP: "198.51.100.7", Port: 4500}, "198.51.100.7:4500"},
		{"a hostname the dialing side resolves", straitv1.PeerEndpoint{Hostname: "gw.example.org", Port: 4500}, "gw.example.org:4500"},
		{"behind masquerade: it dials", straitv1.PeerEndpoint{BehindMasquerade: true, Port: 4500}, "behind-masquerade"},
		{"nothing yet", straitv1.PeerEndpoint{Port: 4500}, ""},
	} {
		if got := advertisedEndpoint(&tc.ep); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
