package shapes

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/straitnet/strait/test/labtest"
)

// DiagnosePasses runs the built strait diagnose, with a kubeconfig file per member, on a
// shape whose CNI masquerades and whose kube-proxy may run in iptables mode: with the
// agent's bypass in place every check passes (exit 0), the cni check above all, which
// would fail on a masquerade that reached remote traffic.
func DiagnosePasses(t *testing.T, env *labtest.Env) {
	args := []string{"diagnose", "all"}
	var members []string
	for _, c := range env.Topo.Clusters {
		members = append(members, c.Name)
		args = append(args, "--member-kubeconfig", c.Name+"="+env.Lab.State().KubeconfigPath(c.Name))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Strait, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	t.Logf("strait diagnose all: %v\n%s%s", err, out.String(), errOut.String())
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if err != nil {
		t.Errorf("strait diagnose all: %v, want exit 0", err)
	}
	rows := 0
	table, _, _ := strings.Cut(out.String(), "\n\n") // WHAT TO DO follows a blank line
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
