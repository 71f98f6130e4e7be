package agent

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

func TestEndpointHostnamesAreResolvedAgainOnTheirInterval(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	answer, lookups := "203.0.113.7", 0
	var fail error
	r := newEndpointResolver(func(_ context.Context, network, host string) ([]netip.Addr, error) {
		lookups++
		if network != "ip4" || host != "gw.c2.example.org" {
			t.Errorf("lookup %s %s", network, host)
		}
		if fail != nil {
			return nil, fail
		}
		return []netip.Addr{netip.MustParseAddr(answer)}, nil
	}, func() time.Time { return now })
	peers := []straitv1.Peer{{Spec: straitv1.PeerSpec{ClusterID: "c2", Endpoint: &straitv1.PeerEndpoint{Hostname: "gw.c2.example.org",
		RefreshInterval: &metav1.Duration{Duration: 30 * time.Second}}}}}
	step := func(wantAddr string, wantLookups int, wantNext time.Duration) {
		t.Helper()
		got, next, _ := r.resolve(context.Background(), peers)
		if got["gw.c2.example.org"].String() != wantAddr || lookups != wantLookups || next != wantNext {
			t.Errorf("at %s: %v after %d lookups, next in %v; want %s after %d, next in %v",
				now.Format(time.TimeOnly), got, lookups, next, wantAddr, wantLookups, wantNext)
		}
	}
	step("203.0.113.7", 1, 30*time.Second)
	now = now.Add(10 * time.Second)
	answer = "203.0.113.8" // the record changed: not seen before the interval is up
	step("203.0.113.7", 1, 20*time.Second)
	now = now.Add(20 * time.Second)
	step("203.0.113.8", 2, 30*time.Second)
	now = now.Add(30 * time.Second)
	fail = errors.New("no resolver")
	// A failed lookup keeps the last address: a resolver outage does not cut the cable.
	step("203.0.113.8", 3, 30*time.Second)
}
