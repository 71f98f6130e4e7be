package labtest

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A pod that lost one of its cluster's families, or holds an address outside its
// ranges, is not taken for a pod of fewer families.
func TestPodInEveryFamily(t *testing.T) {
	v4, v6 := netip.MustParsePrefix("10.8.0.0/16"), netip.MustParsePrefix("fd10:8::/56")
	ips := func(s ...string) []corev1.PodIP {
		var out []corev1.PodIP
		for _, ip := range s {
			out = append(out, corev1.PodIP{IP: ip})
		}
		return out
	}
	for _, c := range []struct {
		ips    []corev1.PodIP
		ranges []netip.Prefix
		ok     bool
	}{
		{ips("10.8.1.5", "fd10:8::1:5"), []netip.Prefix{v4, v6}, true},
		{ips("10.8.1.5"), []netip.Prefix{v4, v6}, false},
		{ips("10.8.1.5"), []netip.Prefix{v4, {}}, true},
		{ips("fd10:8::1:5", "10.8.1.5"), []netip.Prefix{v4, v6}, false},
		{ips("10.9.1.5", "fd10:8::1:5"), []netip.Prefix{v4, v6}, false},
		{ips("fd10:8::1:5"), []netip.Prefix{{}, v6}, true},
	} {
		if err := podInEveryFamily(c.ips, c.ranges...); (err == nil) != c.ok {
			t.Errorf("podInEveryFamily(%v, %v) = %v, want ok %v", c.ips, c.ranges, err, c.ok)
		}
	}
}
