package ipv6only

import (
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/test/labtest"
)

// TestDiagnoseAndVerifyPassOnIPv6OnlyClusters: the operator CLI on the healthy
// IPv6-only lab, with a kubeconfig file per member as a person gives it: strait diagnose's
// checks all pass (its cidrs check once took every IPv6 pod address for a /32 network
// outside the pod CIDR, and its mtu probe refused an IPv6 address), and strait verify's
// connectivity and service discovery pass (its failover needs a second gateway, which
// this lab does not have).
func TestDiagnoseAndVerifyPassOnIPv6OnlyClusters(t *testing.T) {
	env.Require(t)
	var members []string
	for _, c := range []string{"c1", "c2"} {
		members = append(members, "--member-kubeconfig", c+"="+env.Lab.State().KubeconfigPath(c))
	}
	for _, cmd := range [][]string{
		append([]string{"diagnose", "all"}, members...),
		append([]string{"verify", "--only", "connectivity,service-discovery"}, members...),
	} {
		start := time.Now()
		out, errOut, code := labtest.Run(t, 4*time.Minute, env.Strait, cmd...)
		t.Logf("strait %s: exit %d in %.1fs\n%s", strings.Join(cmd[:2], " "), code, time.Since(start).Seconds(), out)
		if code != 0 {
			t.Errorf("strait %s: exit %d, want 0\n%s%s", strings.Join(cmd, " "), code, out, errOut)
		}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) >= 3 && (f[2] == "warn" || f[2] == "fail") {
				t.Errorf("strait %s: %s", cmd[0], line)
			}
		}
	}
}
