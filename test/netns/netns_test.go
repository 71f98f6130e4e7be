package netns

import (
	"testing"
	"time"
)

func TestVethPingAndTCP(t *testing.T) {
	RequireRoot(t)
	a, b := New(t, "a"), New(t, "b")
	Veth(t, a, "eth0", b, "eth0")
	a.AddAddr(t, "eth0", "10.99.0.1/24")
	b.AddAddr(t, "eth0", "10.99.0.2/24")
	if _, err := a.Ping(Addr("10.99.0.2"), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	b.ServeEcho(t, "10.99.0.2:7000")
	got, err := a.WhoAmI("10.99.0.2:7000", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got != "10.99.0.1" {
		t.Fatalf("server saw %s, want 10.99.0.1", got)
	}
}
