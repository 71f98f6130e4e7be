package mcsconformance

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/test/labtest"
	"github.com/straitnet/strait/test/require"
)

// specsRan is the suite's summary line: "Ran 27 of 27 Specs in 195.771 seconds".
var specsRan = regexp.MustCompile(`Ran (\d+) of (\d+) Specs in [0-9.]+ seconds`)

// TestMCSConformance runs the Multi-Cluster Services API's own conformance suite, every
// spec, against this lab (hack/mcs-conformance.sh with STRAIT_LAB_STATE): the ClusterSet
// honours the members' ServiceExports (exportPolicy: MemberExports; the suite exports
// its own services in namespaces of its own), the suite's images are loaded into the
// nodes as a user loads them, and the suite must run every spec and pass.
func TestMCSConformance(t *testing.T) {
	env.Require(t)
	t.Setenv("STRAIT_LAB_STATE", env.Lab.State().Dir)
	t.Setenv("STRAIT", env.Strait)
	t.Setenv("KUBECTL", filepath.Join(env.K8sBin, "kubectl"))
	t.Setenv("MCS_CONFORMANCE_REPORT", filepath.Join(env.Root, "bin", "mcs-conformance", "report"))
	var args []string
	if dir := os.Getenv("MCS_CONFORMANCE"); dir != "" {
		args = append(args, dir)
	}
	// Ginkgo's own limit, under the command's: past it the suite still writes its report
	// and says which specs did not finish. 27 of 27 took 556 s in this lab (dual-stack:
	// every family checked) on the slowest machine kind yet, 2026-12-02, and 315 s in an
	// IPv4 one (hack/mcs-conformance.sh).
	t.Setenv("MCS_CONFORMANCE_TIMEOUT", "15m")
	start := time.Now()
	out, errOut, code := labtest.Run(t, 17*time.Minute, filepath.Join(env.Root, "hack", "mcs-conformance.sh"), args...)
	if strings.Contains(errOut, "mcs-conformance: no suite") {
		require.Skip(t, "the MCS conformance suite's source is not here: %s", strings.TrimSpace(errOut))
	}
	m := specsRan.FindStringSubmatch(out)
	t.Logf("hack/mcs-conformance.sh in this lab: exit %d in %s; %s (report in bin/mcs-conformance/report)", code, time.Since(start).Round(time.Second), summary(m))
	if code != 0 || m == nil || m[1] != m[2] {
		var failed []string
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "[FAIL]") {
				failed = append(failed, line)
			}
		}
		t.Errorf("the MCS conformance suite: exit %d, %s; want every spec run and passed (its whole output: bin/mcs-conformance/run.log)\n%s\n%s",
			code, summary(m), strings.Join(failed, "\n"), errOut)
	}
}

func summary(m []string) string {
	if m == nil {
		return "no summary line"
	}
	return m[0]
}
