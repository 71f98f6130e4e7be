package shapes

import (
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/test/labtest"
)

// DiagnosePasses runs the built strait diagnose, with a kubeconfig file per member, on a
// shape whose CNI masquerades and whose kube-proxy may run in iptables mode: with the
// agent's bypass in place every check passes (exit 0), the cni check above all, which
// would fail on a masquerade that reached remote traffic. It gives the nodes the
// deadlines a person gives a loaded cluster (--node-timeout, --pod-start-timeout): this
// lab of four clusters saturates the 2-core machine, where probe pods were seen to take
// over 30 s to run (the default) and the whole run 86 s against 4 s on a quiet one.
// What it judges is the shapes' data path; TestDiagnoseNeverHangs holds the defaults.
func DiagnosePasses(t *testing.T, env *labtest.Env) {
	args := []string{"diagnose", "all", "--node-timeout=30s", "--pod-start-timeout=90s"}
	var members []string
	for _, c := range env.Topo.Clusters {
		members = append(members, c.Name)
		args = append(args, "--member-kubeconfig", c.Name+"="+env.Lab.State().KubeconfigPath(c.Name))
	}
	out, errOut, code := labtest.Run(t, 4*time.Minute, env.Strait, args...)
	t.Logf("strait diagnose all: exit %d\n%s%s", code, out, errOut)
	if code != 0 {
		t.Errorf("strait diagnose all: exit %d, want 0", code)
	}
	rows := 0
	table, _, _ := strings.Cut(out, "\n\n") // WHAT TO DO follows a blank line
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] == "CHECK" {
			continue
		}
		rows++
		if f[2] != "pass" {
			t.Errorf("%s %s: %s, want pass", f[0], f[1], f[2])
		}
	}
	if want := 9 * len(members); rows != want {
		t.Errorf("%d result lines, want %d (9 checks × %d members)", rows, want, len(members))
	}
}
