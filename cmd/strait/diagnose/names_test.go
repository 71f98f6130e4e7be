package diagnose

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/straitnet/strait/internal/probe"
)

// TestServiceDiscoveryLineSaysWhatWentWrong: strait verify's service-discovery line
// names, for a name that failed, what the lookup got: an error, the record that came
// back empty, or an answer without an address. It printed "<nil>" for a name answered
// with no address (CI, a member's DNS pods on a hung node).
func TestServiceDiscoveryLineSaysWhatWentWrong(t *testing.T) {
	c1, c2 := twoMembers()
	obs := observed{members: []*member{c1, c2}}
	const name = "whereami.sample.svc.clusterset.local"
	v4 := []corev1.IPFamily{corev1.IPv4Protocol}
	for _, tc := range []struct {
		what   string
		l      lookup
		status Status
		want   string
	}{
		{"answered with c2's clusterset IP", lookup{name: name, addrs: []string{"10.98.0.7"}, families: v4,
			records: []probe.Records{{Type: "A", Rcode: "NOERROR", Addresses: []string{"10.98.0.7"}}, {Type: "AAAA", Rcode: "NOERROR"}}},
			Pass, name + " → 10.98.0.7 (c2)"},
		{"the exec failed", lookup{name: name, err: errors.New("node c2-gw did not answer within 10s")}, Fail,
			name + ": node c2-gw did not answer within 10s"},
		{"the A record came back empty", lookup{name: name, families: v4, pod: "probe-1",
			records: []probe.Records{{Type: "A", Rcode: "NOERROR"}, {Type: "AAAA", Rcode: "NOERROR"}}},
			Fail, "A " + name + " (ServiceImport ipFamilies IPv4) is NOERROR with"},
		{"the A query timed out", lookup{name: name, families: v4, pod: "probe-1",
			records: []probe.Records{{Type: "A", Error: "every server timed out"}, {Type: "AAAA", Rcode: "NOERROR"}}},
			Fail, "from pod probe-1: every server timed out"},
		{"an older probe's answer without an address", lookup{name: name}, Fail, name + ": answered with no address"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			r := judgeNames(obs, "c1", []lookup{tc.l})
			if r.Status != tc.status || !strings.Contains(r.Detail, tc.want) || strings.Contains(r.Detail, "<nil>") {
				t.Errorf("service-discovery c1: %s %q, want %s naming %q", r.Status, r.Detail, tc.status, tc.want)
			}
		})
	}
}
